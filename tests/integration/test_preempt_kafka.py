"""Preempt and reclaim on a real broker: one preemption goes through the bus end to end.

``examples/scenarios/preempt-high-priority.yaml`` through the five services on Kafka (real,
sped-up time): the allocator's ``PodEvictionRequested`` reaches the cluster on
``bindings``, the victims end ``Evicted`` after their grace period, the job-controller
restarts the victim job, and the high-priority job binds on the released capacity.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from vcbus.core.runtime.settings import Settings
from vcbus.services.simulation.run import simulate_on_kafka
from vcbus.services.simulation.scenario import load_document, parse_scenario

SCENARIO = (
    Path(__file__).resolve().parents[2] / "examples" / "scenarios" / "preempt-high-priority.yaml"
)


async def test_one_preemption_goes_through_the_bus_end_to_end(
    kafka_bootstrap: str, topic_prefix: str
):
    document = dict(load_document(SCENARIO.read_text()))
    document["until"] = 80
    scenario = parse_scenario(document, SCENARIO.parent)
    settings = dataclasses.replace(
        Settings.from_env({}, bootstrap=kafka_bootstrap), topic_prefix=topic_prefix
    )
    outcome: Any = await simulate_on_kafka(scenario, settings, speed=10.0)
    timeline = outcome["timeline"]
    evicted = [e for e in timeline if e["event"] == "evict"]
    victims = {e["pod"].rsplit("-main-", 1)[0] for e in evicted}
    assert len(evicted) == 2, "one low-priority gang of 2 pods"
    assert len(victims) == 1
    assert {e["taker"] for e in evicted} == {"default/high"}
    ended = [e for e in timeline if e["event"] == "pod" and e.get("reason") == "Evicted"]
    assert len(ended) == 2
    assert outcome["jobs"]["default/high"]["phase"] == "Completed"
    high_bound = min(
        e["t"] for e in timeline if e["event"] == "bind" and e["pod"].startswith("default/high-")
    )
    assert high_bound >= max(e["t"] for e in ended), "bound once the victims were gone"
    assert [e for e in timeline if e["event"] == "refused"] == []
    assert not outcome["deadLetters"]

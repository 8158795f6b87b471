"""``vcbus simulate --bus kafka``: the same scenario on a real broker ends as it does in memory.

On the broker, time is real (sped up) and the services race as they would in production,
so bindings may go to other nodes where nodes tie and the timeline's times differ; the
final phases and counts of jobs, PodGroups and pods must not.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from vcbus.core.runtime.settings import Settings
from vcbus.services.simulation.run import simulate_in_memory, simulate_on_kafka
from vcbus.services.simulation.scenario import load_document, parse_scenario

SCENARIO = Path(__file__).resolve().parents[2] / "examples" / "scenarios" / "full-gang.yaml"


def final_state(outcome: dict[str, Any]) -> dict[str, Any]:
    """What must match across buses: phases, counts, exit codes, rejections."""
    return {
        "jobs": {
            key: (job["phase"], job["podgroup"], job["reason"], job["tasks"])
            for key, job in outcome["jobs"].items()
        },
        "pods": {
            key: (pod["phase"], pod["exitCode"], pod["deleted"], pod["task"])
            for key, pod in outcome["pods"].items()
        },
        "rejected": {
            key: sorted(v["reason"] for v in violations)
            for key, violations in outcome["rejected"].items()
        },
        "deadLetters": outcome["deadLetters"],
        "stoppedBy": outcome["stoppedBy"],
    }


async def test_final_phases_and_counts_match_memory_when_scenario_runs_on_kafka(
    kafka_bootstrap: str, topic_prefix: str
):
    scenario = parse_scenario(load_document(SCENARIO.read_text()), SCENARIO.parent)
    settings = dataclasses.replace(
        Settings.from_env({}, bootstrap=kafka_bootstrap), topic_prefix=topic_prefix
    )
    in_memory = await simulate_in_memory(scenario)
    on_kafka = await simulate_on_kafka(scenario, settings, speed=10.0)
    assert final_state(on_kafka) == final_state(in_memory)
    jobs: Any = on_kafka["jobs"]
    assert {job["phase"] for job in jobs.values()} == {"Completed"}

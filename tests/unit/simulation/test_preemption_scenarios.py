"""Preempt and reclaim through every service: preempt and reclaim on the scenarios of
``examples/scenarios``.

The figures come from the simulated timeline (``tests.bench.quality``, ``vcbus simulate``):
deterministic, in virtual seconds. Victims run out a grace period of 30 s; one cycle is a few
milliseconds of virtual time.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from tests.bench.quality import CASES as QUALITY_CASES
from tests.bench.quality import PREEMPTION, RECLAIM, SCENARIOS, Figures, run_case
from vcbus.services.simulation.run import simulate_document
from vcbus.services.simulation.scenario import load_document

GRACE = 30.0
CYCLE = 1.0
"""A generous bound on one scheduling cycle after the victims end (virtual seconds)."""


def _figures(scenario: str, on: bool = True) -> Figures:
    [case] = [c for c in QUALITY_CASES if c.scenario == scenario]
    variants = PREEMPTION if "preempt" in scenario else RECLAIM
    return run_case(case, variants[0] if on else variants[1])


def _outcome(scenario: str, **queue_changes: object) -> Mapping[str, Any]:
    path = SCENARIOS / scenario
    document = dict(load_document(path.read_text()))
    if queue_changes:
        document["queues"] = [
            {**q, **queue_changes} if q["name"] == "heavy" else q
            for q in document["queues"]  # type: ignore[attr-defined]
        ]
    return simulate_document(document, path.parent)


def _events(outcome: Mapping[str, Any], kind: str) -> list[dict[str, Any]]:
    return [e for e in outcome["timeline"] if e["event"] == kind]


def _never_below_minimum(outcome: Mapping[str, Any], minimums: Mapping[str, int]) -> None:
    """No job ever runs with fewer live pods than its minimum but more than none, after an
    eviction took some (a gang loses all its pods or keeps its minimum)."""
    live: dict[str, set[str]] = {job: set() for job in minimums}
    for entry in outcome["timeline"]:
        pod = str(entry.get("pod", ""))
        job = next((j for j in minimums if pod.startswith(f"default/{j}-")), None)
        if job is None or entry["event"] != "pod":
            continue
        if entry["phase"] == "Running":
            live[job].add(pod)
        elif entry["phase"] in ("Failed", "Succeeded"):
            live[job].discard(pod)
            if entry.get("reason") == "Evicted":
                same_time = [
                    e
                    for e in outcome["timeline"]
                    if e["t"] == entry["t"] and e["event"] == "pod" and e["phase"] == "Failed"
                ]
                gone = {str(e["pod"]) for e in same_time}
                left = live[job] - gone
                assert not left or len(left) >= minimums[job], f"{job} left with {left}"


@pytest.fixture(scope="module")
def preempt_outcome() -> Mapping[str, Any]:
    return _outcome("preempt-high-priority.yaml")


def test_high_priority_job_runs_within_the_victims_grace_period_plus_one_cycle() -> None:
    on, off = _figures("preempt-high-priority.yaml"), _figures("preempt-high-priority.yaml", False)
    assert on.watched_start is not None
    assert on.watched_start <= 10 + GRACE + CYCLE, "arrived at 10 s on a full cluster"
    assert on.evictions == 2, "one low-priority gang of 2 pods, no more"
    assert off.watched_start is None, "without preempt it waits for a 600 s job"


def test_evicted_job_follows_its_restart_policy_and_runs_again(
    preempt_outcome: Mapping[str, Any],
) -> None:
    evicted = {str(e["pod"]) for e in _events(preempt_outcome, "evict")}
    assert evicted == {"default/low-c-main-0", "default/low-c-main-1"}
    jobs = preempt_outcome["jobs"]
    assert jobs["default/low-c"]["phase"] == "Running", "RestartJob on PodEvicted"
    restarted = [e for e in _events(preempt_outcome, "job") if e["job"] == "default/low-c"]
    assert [e["phase"] for e in restarted][-3:] == ["Restarting", "Pending", "Running"]
    for other in ("default/low-a", "default/low-b", "default/low-d"):
        assert jobs[other]["phase"] == "Running"


def test_preemptor_waits_for_eviction_and_nothing_overcommits(
    preempt_outcome: Mapping[str, Any],
) -> None:
    reasons = [
        e.get("reason") for e in _events(preempt_outcome, "podgroup") if e["job"] == "default/high"
    ]
    assert "WaitingForEviction" in reasons
    assert _events(preempt_outcome, "refused") == [], "the cluster refused no binding"
    [nominated] = _events(preempt_outcome, "nominated")
    [ended] = _events(preempt_outcome, "nomination")
    assert ended["reason"] == "Bound"
    binds = {str(e["pod"]): e["t"] for e in _events(preempt_outcome, "bind")}
    victims_end = max(
        e["t"] for e in _events(preempt_outcome, "pod") if e.get("reason") == "Evicted"
    )
    assert all(binds[p.split(" on ")[0]] >= victims_end for p in nominated["pods"])


def test_a_gang_victim_loses_all_its_pods_or_keeps_its_minimum() -> None:
    outcome = _outcome("preempt-gang-all-or-nothing.yaml")
    evicted = sorted(str(e["pod"]) for e in _events(outcome, "evict"))
    wide = [p for p in evicted if "/wide-" in p]
    elastic = [p for p in evicted if "/elastic-" in p]
    assert len(wide) in (0, 4), "wide (minimum 4) loses all or nothing"
    assert len(elastic) <= 2, "elastic (minimum 2) keeps its minimum"
    _never_below_minimum(outcome, {"wide": 4, "elastic": 2})
    assert outcome["jobs"]["default/elastic"]["phase"] == "Running"
    assert _events(outcome, "refused") == []


def test_light_queue_gets_its_weights_share_within_grace_plus_one_cycle() -> None:
    on = _figures("reclaim-light-queue.yaml")
    assert on.watched_start is not None
    assert on.watched_start <= 10 + GRACE + CYCLE, "the light queue's last job"
    assert on.shares["light"] == pytest.approx((0.5, 0.5), abs=0.01)
    assert on.evictions == 8, "four heavy gangs of 2 pods: the light queue's half"


def test_a_queue_that_is_not_reclaimable_keeps_its_pods() -> None:
    outcome = _outcome("reclaim-light-queue.yaml", reclaimable=False)
    assert _events(outcome, "evict") == []
    jobs = outcome["jobs"]
    assert all(jobs[f"default/heavy-{i}"]["phase"] == "Running" for i in range(8))
    assert all(jobs[f"default/light-{i}"]["phase"] == "Pending" for i in range(4))

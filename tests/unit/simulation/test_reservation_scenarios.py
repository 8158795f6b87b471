"""docs/design.md#reservation (revised) through every service, on the scenarios of
``examples/scenarios``.

Each rule has its scene; the figures come from ``tests.bench.quality`` (the simulated
timeline, deterministic), with the reservation actions on and off.
"""

from __future__ import annotations

import pytest

from tests.bench.quality import CASES, RESERVATION, SCENARIOS, Case, Figures, run_case
from vcbus.services.simulation.run import simulate_document
from vcbus.services.simulation.scenario import load_document

ON, OFF = RESERVATION


def _case(scenario: str) -> Case:
    [case] = [c for c in CASES if c.scenario == scenario]
    return case


@pytest.fixture(scope="module")
def knavigator() -> Figures:
    return run_case(_case("knavigator-gang-burst.yaml"), ON)


def test_knavigator_burst_finishes_within_five_percent_of_perfect_with_the_defaults(
    knavigator: Figures,
) -> None:
    """No harm: nobody starves, nothing is elected, every round starts when the last ends."""
    assert knavigator.makespan is not None
    assert knavigator.makespan <= 1.05 * 270
    assert knavigator.elections == 0
    assert knavigator.unfinished == []
    assert [round(first) for first, _ in knavigator.rounds.values()] == list(range(0, 270, 30))


def test_starving_big_job_gets_its_nodes_within_one_small_run_when_reservation_is_on() -> None:
    case = _case("starving-big-job.yaml")
    on, off = run_case(case, ON), run_case(case, OFF)
    assert on.elections == 1
    assert on.watched_start is not None
    assert on.watched_start <= 10 + 2 * 4, "arrived at 10 s; elected once overtaken, its "
    "locked nodes drain within a small job's run (4 s)"
    assert off.watched_start is not None
    assert off.watched_start >= 120, "without reservation it waits for the stream to end"


def test_infeasible_jobs_lock_nothing_and_later_jobs_run_when_reservation_is_on() -> None:
    figures = run_case(_case("reservation-infeasible.yaml"), ON)
    assert figures.elections == 0
    assert figures.watched_start == pytest.approx(2.0, abs=0.1), "small-2 runs on arrival"
    assert figures.unfinished == ["default/job", "default/nowhere", "default/too-big"]
    assert set(figures.reasons.values()) == {"Infeasible"}


def test_master_binds_in_its_will_bind_room_when_small_jobs_arrive_meanwhile() -> None:
    """The workers start at 4 s (start delay); the master binds then, not after a small job
    ends (25 s), and no small job is elected: the third one waits only for the room the
    master's will-bind holds."""
    figures = run_case(_case("reservation-will-bind.yaml"), ON)
    assert figures.elections == 0
    assert figures.unfinished == []
    workers = [t for pod, t in figures.pod_starts.items() if "-worker-" in pod]
    assert figures.watched_start is not None
    assert figures.watched_start <= max(workers) + 4 + 1, "bound as the workers run"


def test_target_is_released_at_lock_max_and_elected_again_after_the_backoff() -> None:
    """reservation-expired.yaml: lock-max 60 s, lock-backoff 30 s, elected at 1 s."""
    path = SCENARIOS / "reservation-expired.yaml"
    outcome = simulate_document(load_document(path.read_text()), path.parent)
    timeline = outcome["timeline"]
    assert isinstance(timeline, list)
    reservation = [
        (e["event"], round(e["t"])) for e in timeline if e["event"] in ("elected", "unlocked")
    ]
    assert reservation == [("elected", 1), ("unlocked", 61), ("elected", 91)]
    [unlocked] = [e for e in timeline if e["event"] == "unlocked"]
    assert unlocked["reason"].startswith("ReservationExpired")
    small = [e["t"] for e in timeline if e.get("pod") == "default/small-w-0"]
    assert small, "the job its locks held back runs"
    assert 61 <= min(small) < 91, "in the backoff"

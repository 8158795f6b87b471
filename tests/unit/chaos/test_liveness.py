"""The liveness check on a real run's topics, and on copies where a step came late or never."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

import msgspec
import pytest

from tests.chaos.checks import check_all
from tests.chaos.history import History
from tests.chaos.liveness import STEP_BOUND, StepTiming, check_liveness, slowest_steps, steps
from tests.unit.chaos.real_run import RealRun, real_run
from vcbus.contracts import Event, JobStatusChanged, PodCreated, PodPhaseChanged, key_of
from vcbus.contracts.objects.pod import PodPhase

LATE = STEP_BOUND + timedelta(seconds=30)


@pytest.fixture(scope="module")
def run() -> RealRun:
    return real_run()


def failing_job(history: History) -> str:
    return next(
        e.job for e in history.pods_status if isinstance(e, PodPhaseChanged) and "failing-" in e.job
    )


def watched_long(history: History) -> StepTiming:
    """Judged well after the run's last record: a step never taken is late by then."""
    last = max(e.occurred_at for e in [*history.status, *history.pods_status, *history.pods])
    return StepTiming(end=last + 2 * LATE)


def test_the_real_run_takes_every_step_at_once(run: RealRun) -> None:
    found = steps(run.history)
    assert set(Counter(step.what for step in found)) == {
        "status",
        "pods",
        "job-follows-pod",
        "pod-ends",
    }
    assert all(step.done is not None for step in found)
    assert check_liveness(run.history, watched_long(run.history)) == []
    assert slowest_steps(run.history)[0]["seconds"] == 0.0


def test_a_job_whose_pods_failed_and_no_status_followed_is_caught(run: RealRun) -> None:
    history = run.copy()
    job = failing_job(history)
    first_end = min(
        e.occurred_at
        for e in history.pods_status
        if isinstance(e, PodPhaseChanged) and e.job == job and e.phase is PodPhase.FAILED
    )
    history.status = [
        e
        for e in history.status
        if not (isinstance(e, JobStatusChanged) and e.job == job and e.occurred_at >= first_end)
    ]

    violations = check_liveness(history, watched_long(history))

    assert violations
    assert {v.check for v in violations} == {"liveness"}
    assert all(v.detail.startswith(f"{job}: step job-follows-pod") for v in violations)
    assert "never taken" in violations[0].detail
    assert violations[0] in check_all(history, run.planned, steps=watched_long(history))


def stall_controller(history: History, job: str, by: timedelta) -> None:
    """Delay what the job-controller wrote for ``job`` from its first pod on by ``by``."""
    since = min(
        e.occurred_at for e in history.pods if isinstance(e, PodCreated) and e.pod.job == job
    )

    def late(events: list[Event]) -> list[Event]:
        return [
            msgspec.structs.replace(e, occurred_at=e.occurred_at + by)
            if key_of(e) == job and e.occurred_at >= since
            else e
            for e in events
        ]

    history.pods, history.status, history.podgroups = (
        late(history.pods),
        late(history.status),
        late(history.podgroups),
    )


def test_pods_created_long_after_their_podgroup_went_inqueue_are_caught(run: RealRun) -> None:
    history = run.copy()
    job = failing_job(history)
    stall_controller(history, job, LATE)

    violations = [v for v in check_liveness(history) if " step pods " in v.detail]

    assert len(violations) == 1
    assert violations[0].detail.startswith(f"{job}: step pods")
    assert f"taken after {LATE.total_seconds():.1f}s" in violations[0].detail


def test_a_broker_frozen_meanwhile_excuses_the_wait(run: RealRun) -> None:
    history = run.copy()
    job = failing_job(history)
    stall_controller(history, job, LATE)
    inqueue = next(s for s in steps(history) if s.job == job and s.what == "pods")
    frozen = [(inqueue.due, inqueue.due + LATE)]

    assert [v for v in check_liveness(history, StepTiming(frozen=frozen)) if job in v.detail] == []


def test_a_pod_that_runs_far_past_its_run_seconds_is_caught(run: RealRun) -> None:
    history = run.copy()
    ended = next(
        e
        for e in history.pods_status
        if isinstance(e, PodPhaseChanged) and e.phase is PodPhase.SUCCEEDED
    )
    history.pods_status = [
        msgspec.structs.replace(e, occurred_at=e.occurred_at + LATE) if e is ended else e
        for e in history.pods_status
    ]

    violations = [v for v in check_liveness(history) if " step pod-ends " in v.detail]

    assert [v.detail.split(" due ")[0] for v in violations] == [
        f"{ended.job}: step pod-ends of {ended.pod_uid}"
    ]

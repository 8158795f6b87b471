"""The checks on a real run's topics, and on corrupted copies of them: the run passes, and
each corruption the old checks missed is caught.

The run (``tests.unit.chaos.real_run``) has gangs, restarted jobs (``maxRetry: 2``, a new
job version per restart) and a big job whose nodes were locked, so every check meets what
it judges in the form the services really write it.
"""

from __future__ import annotations

from datetime import timedelta

import msgspec
import pytest

from tests.chaos.checks import (
    LockTiming,
    check_all,
    check_evictions,
    check_locks,
    check_pods_end_once,
    check_pods_run_once,
    lock_hits,
    lock_intervals,
)
from tests.chaos.history import History
from tests.unit.chaos.real_run import RealRun, real_run
from vcbus.contracts import (
    BindingCreated,
    JobKey,
    LocksHonoured,
    NodeName,
    PodCreated,
    PodEvictionRequested,
    PodPhaseChanged,
)
from vcbus.contracts.objects.pod import LABEL_JOB_RETRY_COUNT, LABEL_JOB_VERSION, Pod, PodPhase


@pytest.fixture(scope="module")
def run() -> RealRun:
    return real_run()


def created(history: History, shape: str) -> list[PodCreated]:
    return [
        e
        for e in history.pods
        if isinstance(e, PodCreated) and e.pod.job.split("/")[1].startswith(f"{shape}-")
    ]


def again(event: PodCreated, **labels: str) -> PodCreated:
    """The same pod created once more by another event, with ``labels`` changed."""
    pod: Pod = msgspec.structs.replace(
        event.pod, uid=f"{event.pod.uid}-again", labels={**event.pod.labels, **labels}
    )
    return msgspec.structs.replace(event, event_id=f"{event.event_id}-again", pod=pod)


def test_the_real_run_passes_every_check_and_has_what_they_judge(run: RealRun) -> None:
    history = run.history
    assert check_all(history, run.planned) == []
    restarted = created(history, "restart")
    assert {e.pod.labels[LABEL_JOB_RETRY_COUNT] for e in restarted} == {"0", "1"}
    assert max(int(e.pod.labels[LABEL_JOB_VERSION]) for e in restarted) >= 1
    assert any(isinstance(e, LocksHonoured) for e in history.capacity)
    assert lock_intervals(history)


def test_a_gang_run_again_under_job_version_1_is_caught(run: RealRun) -> None:
    history = run.copy()
    first = created(history, "gang")[0]
    assert first.pod.labels[LABEL_JOB_VERSION] == "0"
    history.pods.append(again(first, **{LABEL_JOB_VERSION: "1"}))
    violations = check_pods_run_once(history)
    assert [v.check for v in violations] == ["pod-runs-once"]
    assert violations[0] in check_all(history, run.planned)
    assert f"{first.pod.job} " in violations[0].detail
    assert "created by 2 different events" in violations[0].detail


def test_a_max_retry_2_job_with_a_version_9_pod_is_caught(run: RealRun) -> None:
    pods = [
        e for e in created(run.history, "restart") if e.pod.labels[LABEL_JOB_RETRY_COUNT] == "1"
    ]
    last = pods[-1]
    history = run.copy()
    history.pods.append(again(last, **{LABEL_JOB_VERSION: "9"}))
    assert [v.check for v in check_pods_run_once(history)] == ["pod-runs-once"]
    history = run.copy()
    history.pods.append(again(last, **{LABEL_JOB_VERSION: "9", LABEL_JOB_RETRY_COUNT: "9"}))
    violations = check_pods_run_once(history)
    assert [v.check for v in violations] == ["pod-runs-once"]
    assert f"created at retry 9, but {last.pod.job} has maxRetry 2" in violations[0].detail


def foreign_bindings(history: History, bound: timedelta) -> list[BindingCreated]:
    """One binding of another job's pod in the middle of each lock that outlasts ``bound``
    twice over (so it falls after the allocator must have read the lock)."""
    pods = [e.pod for e in history.pods if isinstance(e, PodCreated)]
    out = []
    for number, lock in enumerate(lock_intervals(history)):
        if lock.end is None or lock.end - lock.start <= 2 * bound:
            continue
        pod = next(p for p in pods if p.job != lock.job)
        out.append(
            BindingCreated(
                event_id=f"injected-{number}",
                occurred_at=lock.start + (lock.end - lock.start) / 2,
                pod=pod,
                node=NodeName(lock.node),
            )
        )
    return out


def test_foreign_bindings_on_locked_nodes_are_caught_without_locks_honoured(run: RealRun) -> None:
    timing = LockTiming(read_bound=timedelta(milliseconds=200))
    history = run.copy()
    history.capacity = [e for e in history.capacity if not isinstance(e, LocksHonoured)]
    injected = foreign_bindings(history, timing.read_bound)
    assert len(injected) >= 5
    assert check_locks(history, timing) == []
    _, run_races = lock_hits(history, timing)  # bindings decided as a lock was published
    history.bindings += injected
    violations, races = lock_hits(history, timing)
    assert len(violations) == len(injected)
    assert races == run_races
    assert {v.check for v in check_all(history, run.planned, timing)} == {"locks"}


def _evictions(history: History) -> list[PodEvictionRequested]:
    return [e for e in history.bindings if isinstance(e, PodEvictionRequested)]


def test_the_real_run_preempts_a_whole_gang_and_passes_the_eviction_check(run: RealRun) -> None:
    """The run's allocator runs preempt: an evictable gang loses all its pods at once."""
    evictions = _evictions(run.history)
    assert evictions, "the real run has a preemption to judge"
    assert {e.reason for e in evictions} == {"Preempted"}
    assert all(e.job.split("/")[1].startswith("evictable-") for e in evictions)
    assert check_evictions(run.history) == []


def test_an_eviction_that_leaves_a_gang_below_its_minimum_is_caught(run: RealRun) -> None:
    """Drop one of a gang's evictions: the gang would run on below its minimum."""
    history = run.copy()
    first = _evictions(history)[0]
    history.bindings = [e for e in history.bindings if e is not first]
    found = check_evictions(history)
    assert [v.check for v in found] == ["evictions"]
    assert f"{first.job} left with" in found[0].detail


def test_a_pod_evicted_twice_is_caught(run: RealRun) -> None:
    """The same pod incarnation asked to go again, for another preemptor."""
    history = run.copy()
    first = _evictions(history)[0]
    history.bindings.append(
        msgspec.structs.replace(
            first,
            event_id=f"{first.event_id}-again",
            preemptor=JobKey("chaos/someone-else"),
            occurred_at=first.occurred_at + timedelta(seconds=1),
        )
    )
    found = check_evictions(history)
    assert any("evicted by 2 different requests" in v.detail for v in found)


def _first_end(history: History, phase: PodPhase) -> PodPhaseChanged:
    return next(
        e for e in history.pods_status if isinstance(e, PodPhaseChanged) and e.phase is phase
    )


def test_a_pod_run_again_by_an_agent_killed_before_its_binding_was_committed_is_caught(
    run: RealRun,
) -> None:
    """A killed agent read the binding again once the ended pod was forgotten, ran it again
    and published its end under a new id: the pod is counted twice."""
    history = run.copy()
    end = _first_end(history, PodPhase.SUCCEEDED)
    later = end.occurred_at + timedelta(seconds=3)
    history.pods_status.append(
        msgspec.structs.replace(end, event_id=f"{end.event_id}-again", occurred_at=later)
    )
    violations = check_pods_end_once(history)
    assert [v.check for v in violations] == ["ends-once"]
    assert f"pod {end.pod} uid {end.pod_uid} ended 2x" in violations[0].detail
    assert violations[0] in check_all(history, run.planned)
    redelivered = run.copy()
    redelivered.pods_status.append(end)  # the same event read again is one end
    assert check_pods_end_once(redelivered) == []


def test_a_pod_lost_by_its_agent_is_caught(run: RealRun) -> None:
    """A supervisor gone with its agent (``Lost``) or a node silent past the limits
    (``NodeLost``): an agent's kill -9 is shorter than the grace and must lose nothing."""
    for reason in ("Lost", "NodeLost"):
        history = run.copy()
        end = _first_end(history, PodPhase.FAILED)
        index = history.pods_status.index(end)
        history.pods_status[index] = msgspec.structs.replace(end, reason=reason)
        violations = check_pods_end_once(history)
        assert [v.check for v in violations] == ["ends-once"]
        assert f"uid {end.pod_uid} on {end.node} ended {reason}" in violations[0].detail

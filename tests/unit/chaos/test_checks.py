"""The chaos run's checks on hand-made topic histories: each broken promise is caught."""

from __future__ import annotations

import json
import signal
from datetime import UTC, datetime, timedelta

import msgspec
import pytest

from tests.chaos.checks import (
    LockTiming,
    ProcessEnd,
    check_all,
    check_bound_once,
    check_capacity,
    check_counts,
    check_exits,
    check_final_phases,
    check_locks,
    check_pods_run_once,
    lock_hits,
)
from tests.chaos.history import History
from tests.chaos.workload import PlannedJob
from vcbus.contracts import (
    BindingCreated,
    CapacityReleased,
    CapacityReserved,
    Event,
    JobAdmitted,
    JobKey,
    JobStatusChanged,
    LocksHonoured,
    LocksLifted,
    NodeName,
    NodeRegistered,
    NodesLocked,
    NodesUnlocked,
    PodCreated,
    PodDeleted,
    PodKey,
    PodPhaseChanged,
    SubmissionOrigin,
    TargetJobElected,
)
from vcbus.contracts.events.capacity_reservations import ReservedPod
from vcbus.contracts.events.jobs_status import TaskCounts
from vcbus.contracts.objects.job import JobPhase
from vcbus.contracts.objects.node import Node
from vcbus.contracts.objects.pod import LABEL_JOB_RETRY_COUNT, LABEL_JOB_VERSION, Pod, PodPhase
from vcbus.contracts.quantity import parse_resources
from vcbus.core.step import Ctx
from vcbus.services.admission.core import AdmissionLimits, Submission, decide

T0 = datetime(2026, 1, 1, tzinfo=UTC)
LIMITS = AdmissionLimits(max_payload_bytes=1 << 20)
JOB = JobKey("chaos/a")
OTHER = JobKey("chaos/b")
JOB_UID = "0f3c2a"


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def pod(
    job: JobKey, index: int, *, cpu: str = "1", version: str = "0", retry: str | None = None
) -> Pod:
    name = job.split("/")[1]
    return Pod(
        name=f"{name}-worker-{index}",
        namespace="chaos",
        job=job,
        task="worker",
        index=index,
        podgroup=f"{name}-{JOB_UID}",
        uid=f"{name}-{index}-v{version}",
        requests=parse_resources({"cpu": cpu, "memory": "1Gi"}),
        labels={LABEL_JOB_VERSION: version, LABEL_JOB_RETRY_COUNT: retry or version},
    )


def created(p: Pod, event_id: str | None = None) -> PodCreated:
    return PodCreated(event_id=event_id or f"created-{p.uid}", occurred_at=T0, pod=p)


def phase(p: Pod, node: str, what: PodPhase, when: float, *, reason: str = "") -> PodPhaseChanged:
    return PodPhaseChanged(
        event_id=f"{p.uid}-{node}-{what}-{reason}",
        occurred_at=at(when),
        pod=PodKey(f"{p.namespace}/{p.name}"),
        job=p.job,
        task=p.task,
        node=NodeName(node),
        phase=what,
        reason=reason,
        pod_uid=p.uid,
    )


def bound(p: Pod, node: str, when: float) -> PodPhaseChanged:
    return phase(p, node, PodPhase.PENDING, when, reason="Bound")


def binding(p: Pod, node: str, when: float) -> BindingCreated:
    return BindingCreated(
        event_id=f"binding-{p.uid}-{node}", occurred_at=at(when), pod=p, node=NodeName(node)
    )


def node(name: str, cpu: str = "2") -> NodeRegistered:
    return NodeRegistered(
        event_id=f"node-{name}",
        occurred_at=T0,
        node=Node(name=name, allocatable=parse_resources({"cpu": cpu, "memory": "8Gi"})),
    )


def status(
    job: JobKey, what: JobPhase, *, succeeded: int = 0, running: int = 0
) -> JobStatusChanged:
    return JobStatusChanged(
        event_id=f"status-{job}-{what}",
        occurred_at=T0,
        job=job,
        phase=what,
        succeeded=succeeded,
        running=running,
        task_status_count={"worker": TaskCounts(succeeded=succeeded, running=running)},
    )


def planned(job: JobKey, expected: str = "Completed") -> PlannedJob:
    return PlannedJob(job, "gang", {"spec": {"tasks": [{"replicas": 1}]}}, expected)


def admitted(job: JobKey, *, max_retry: int = 0) -> JobAdmitted:
    """A real admission of a one-task job named like ``job``."""
    manifest = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": job.split("/")[1], "namespace": "chaos"},
        "spec": {
            **({"maxRetry": max_retry} if max_retry else {}),
            "tasks": [
                {
                    "name": "worker",
                    "replicas": 1,
                    "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}},
                }
            ],
        },
    }
    origin = SubmissionOrigin(topic="jobs.submitted", partition=0, offset=0)
    events = decide(
        {}, Submission(payload=json.dumps(manifest).encode(), origin=origin), Ctx(now=T0), LIMITS
    )
    (event,) = events
    assert isinstance(event, JobAdmitted)
    return event


def one_pod_run() -> History:
    p = pod(JOB, 0)
    return History(
        admitted=[admitted(JOB)],
        status=[
            status(JOB, JobPhase.RUNNING, running=1),
            status(JOB, JobPhase.COMPLETED, succeeded=1),
        ],
        pods=[created(p), created(p)],
        bindings=[binding(p, "n1", 1)],
        pods_status=[
            bound(p, "n1", 1),
            bound(p, "n1", 1),
            phase(p, "n1", PodPhase.RUNNING, 2),
            phase(p, "n1", PodPhase.SUCCEEDED, 3),
        ],
        nodes=[node("n1")],
    )


def test_no_violation_when_a_pod_is_created_bound_and_finished_once_even_if_redelivered() -> None:
    assert check_all(one_pod_run(), [planned(JOB)]) == []


def test_a_pod_created_by_two_different_events_is_a_violation() -> None:
    p = pod(JOB, 0)
    history = History(pods=[created(p, "one"), created(p, "two")])
    assert [v.check for v in check_pods_run_once(history)] == ["pod-runs-once"]


def test_a_pod_of_the_next_retry_is_no_violation_whatever_the_versions_between() -> None:
    history = History(
        admitted=[admitted(JOB)],
        pods=[created(pod(JOB, 0)), created(pod(JOB, 0, version="5", retry="1"))],
    )
    assert check_pods_run_once(history) == []


def test_a_gang_run_again_under_a_new_job_version_but_the_same_retry_is_a_violation() -> None:
    history = one_pod_run()
    history.pods.append(created(pod(JOB, 0, version="1", retry="0")))
    violations = check_pods_run_once(history)
    assert [v.check for v in violations] == ["pod-runs-once"]
    assert f"uid {JOB_UID}" in violations[0].detail
    assert "at retry 0 created by 2 different events" in violations[0].detail


def test_the_same_pod_under_another_job_uid_is_another_pod() -> None:
    first = pod(JOB, 0)
    again = msgspec.structs.replace(first, podgroup="a-9e1d00", uid="a-0-v0-new")
    assert check_pods_run_once(History(pods=[created(first), created(again)])) == []


def test_a_pod_of_a_max_retry_2_job_at_version_9_is_a_violation() -> None:
    history = History(
        admitted=[admitted(JOB, max_retry=2)],
        pods=[created(pod(JOB, 0)), created(pod(JOB, 0, version="1", retry="1"))],
    )
    assert check_pods_run_once(history) == []
    twice = History(
        admitted=history.admitted,
        pods=[*history.pods, created(pod(JOB, 0, version="9", retry="1"))],
    )
    assert [v.check for v in check_pods_run_once(twice)] == ["pod-runs-once"]
    beyond = History(
        admitted=history.admitted,
        pods=[*history.pods, created(pod(JOB, 0, version="9", retry="2"))],
    )
    violations = check_pods_run_once(beyond)
    assert [v.check for v in violations] == ["pod-runs-once"]
    assert "created at retry 2, but chaos/a has maxRetry 2" in violations[0].detail


def test_a_pod_without_a_retry_count_is_a_violation() -> None:
    p = pod(JOB, 0)
    unlabelled = msgspec.structs.replace(p, labels={LABEL_JOB_VERSION: "0"})
    violations = check_pods_run_once(History(pods=[created(unlabelled)]))
    assert [v.check for v in violations] == ["pod-runs-once"]
    assert "has no retry count" in violations[0].detail


def test_a_pod_bound_to_two_nodes_is_a_violation() -> None:
    p = pod(JOB, 0)
    history = History(pods_status=[bound(p, "n1", 1), bound(p, "n2", 1)])
    assert [v.check for v in check_bound_once(history)] == ["bound-once"]


def test_a_node_over_its_allocatable_is_a_violation() -> None:
    first, second, third = pod(JOB, 0), pod(JOB, 1), pod(JOB, 2)
    history = History(
        nodes=[node("n1", cpu="2")],
        pods=[created(first), created(second), created(third)],
        pods_status=[bound(first, "n1", 1), bound(second, "n1", 2), bound(third, "n1", 3)],
    )
    violations = check_capacity(history)
    assert [v.check for v in violations] == ["capacity"]
    assert "cpu" in violations[0].detail


def test_capacity_freed_by_an_ended_pod_is_no_violation_when_the_next_pod_binds() -> None:
    first, second, third = pod(JOB, 0), pod(JOB, 1), pod(JOB, 2)
    history = History(
        nodes=[node("n1", cpu="2")],
        pods=[created(first), created(second), created(third)],
        pods_status=[
            bound(first, "n1", 1),
            bound(second, "n1", 1),
            phase(first, "n1", PodPhase.SUCCEEDED, 2),
            bound(third, "n1", 2),
        ],
    )
    assert check_capacity(history) == []


def lock_history(binding_at: float) -> History:
    return History(
        reservations=[
            TargetJobElected(event_id="e", occurred_at=at(1), job=JOB, generation=1),
            NodesLocked(
                event_id="l", occurred_at=at(1), job=JOB, nodes=(NodeName("n1"),), generation=1
            ),
            NodesUnlocked(
                event_id="u", occurred_at=at(5), job=JOB, nodes=(NodeName("n1"),), generation=1
            ),
        ],
        capacity=[
            LocksHonoured(
                event_id="h", occurred_at=at(2), job=JOB, generation=1, nodes=(NodeName("n1"),)
            )
        ],
        bindings=[binding(pod(OTHER, 0), "n1", binding_at), binding(pod(JOB, 0), "n1", 3)],
    )


def test_another_jobs_pod_on_a_node_the_allocator_holds_locked_is_a_violation() -> None:
    assert [v.check for v in check_locks(lock_history(3))] == ["locks"]


def will_bind(reserved_at: float, node: str, *, released_at: float | None = None) -> list[Event]:
    """OTHER's will-bind holds the room of its worker-0 on ``node`` from ``reserved_at``."""
    room = ReservedPod(task="worker", index=0, node=NodeName(node))
    events: list[Event] = [
        CapacityReserved(
            event_id="r",
            occurred_at=at(reserved_at),
            job=OTHER,
            podgroup="b",
            pods=(room,),
            held=(room,),
        )
    ]
    if released_at is not None:
        events.append(
            CapacityReleased(
                event_id="x",
                occurred_at=at(released_at),
                job=OTHER,
                podgroup="b",
                pods=(room,),
                held=(),
                reason="WillBindTimeout",
            )
        )
    return events


def test_a_pod_bound_into_its_own_jobs_will_bind_room_on_a_locked_node_is_no_violation() -> None:
    """docs/design.md#reservation: a lock never refuses a job the room its own will-bind holds."""
    history = lock_history(3)
    history.capacity.extend(will_bind(0.5, "n1"))

    assert lock_hits(history) == ([], [])


@pytest.mark.parametrize(
    ("reserved_on", "released_at"), [("n2", None), ("n1", 2.5)], ids=["other-node", "released"]
)
def test_a_will_bind_room_elsewhere_or_given_back_does_not_excuse_a_binding(
    reserved_on: str, released_at: float | None
) -> None:
    history = lock_history(3)
    history.capacity.extend(will_bind(0.5, reserved_on, released_at=released_at))

    assert [v.check for v in check_locks(history)] == ["locks"]


def test_a_binding_decided_before_the_allocator_read_the_lock_is_a_race_not_a_violation() -> None:
    violations, races = lock_hits(lock_history(1.5))
    assert violations == []
    assert len(races) == 1


def test_bindings_after_the_unlock_are_no_violation() -> None:
    assert lock_hits(lock_history(6)) == ([], [])


def test_bindings_once_the_allocator_lifted_the_locks_are_no_violation() -> None:
    """The target was placed at 3: the same cycle and later ones use the node
    (docs/design.md#reservation)."""
    lifted = LocksLifted(
        event_id="x", occurred_at=at(3), job=JOB, generation=1, nodes=(NodeName("n1"),)
    )
    history = lock_history(3)
    history.capacity.append(lifted)
    assert lock_hits(history) == ([], [])
    history = lock_history(2.5)
    history.capacity.append(lifted)
    assert [v.check for v in check_locks(history)] == ["locks"]


def without_honoured(history: History) -> History:
    """The history as if the allocator's ``LocksHonoured`` were lost."""
    history.capacity = []
    return history


def test_without_locks_honoured_a_binding_past_the_read_bound_is_a_violation() -> None:
    timing = LockTiming(read_bound=timedelta(seconds=1))
    violations, races = lock_hits(without_honoured(lock_history(3)), timing)
    assert [v.check for v in violations] == ["locks"]
    assert races == []


def test_without_locks_honoured_a_binding_within_the_read_bound_is_a_race() -> None:
    timing = LockTiming(read_bound=timedelta(seconds=1))
    violations, races = lock_hits(without_honoured(lock_history(1.5)), timing)
    assert violations == []
    assert len(races) == 1


def test_foreign_bindings_injected_into_a_lock_are_each_a_violation() -> None:
    history = without_honoured(lock_history(6))
    injected = [binding(pod(OTHER, i), "n1", 1.5 + i * 0.25) for i in range(1, 11)]
    history.bindings += injected
    timing = LockTiming(read_bound=timedelta(seconds=1))
    violations, races = lock_hits(history, timing)
    # locked at 1, read by 2 at the latest, released at 5: 1.75 is a race, 2.0 to 4.0 not
    assert len(races) == 1
    assert len(violations) == 9
    assert check_all(history, [], timing)[-9:] == violations


def test_locks_honoured_sooner_than_the_bound_starts_the_lock_then() -> None:
    violations, races = lock_hits(lock_history(3), LockTiming(read_bound=timedelta(seconds=60)))
    assert [v.check for v in violations] == ["locks"]
    assert races == []


def test_a_broker_freeze_extends_the_read_bound_by_its_length() -> None:
    timing = LockTiming(read_bound=timedelta(seconds=1), frozen=[(at(1.2), at(4))])
    assert timing.read_by(at(1)) == at(4.8)
    assert timing.read_by(at(0)) == at(1)
    assert timing.read_by(at(0.5)) == at(4.3)
    assert timing.read_by(at(4.5)) == at(5.5)
    assert timing.read_by(at(-10)) == at(-9)
    history = without_honoured(lock_history(4.5))
    assert lock_hits(history, timing)[0] == []
    history.bindings.append(binding(pod(OTHER, 1), "n1", 4.9))
    assert [v.check for v in lock_hits(history, timing)[0]] == ["locks"]


def test_status_counts_that_disagree_with_the_pod_phases_are_a_violation() -> None:
    history = one_pod_run()
    history.status.append(status(JOB, JobPhase.COMPLETED, succeeded=2))
    assert {v.check for v in check_counts(history, [planned(JOB)])} == {"counts"}


def test_deleted_pods_do_not_count_when_the_status_is_compared() -> None:
    history = one_pod_run()
    gone = pod(JOB, 1)
    history.pods += [
        created(gone),
        PodDeleted(
            event_id="d", occurred_at=T0, job=JOB, pod=PodKey("chaos/a-worker-1"), pod_uid=gone.uid
        ),
    ]
    assert check_counts(history, [planned(JOB)]) == []


def test_a_job_ending_in_another_phase_than_its_shape_says_is_a_violation() -> None:
    assert [v.check for v in check_final_phases(one_pod_run(), [planned(JOB, "Failed")])] == [
        "final-phase"
    ]
    assert [v.check for v in check_final_phases(History(), [planned(JOB)])] == ["final-phase"]


def test_planned_kills_and_clean_stops_are_no_violation() -> None:
    ends = [
        ProcessEnd("admission-a.0", -signal.SIGKILL, "kill"),
        ProcessEnd("admission-a.1", 0, "stop"),
        ProcessEnd("allocator-b.0", None, ""),
    ]
    assert check_exits(ends) == []


def test_a_crash_of_an_earlier_incarnation_is_a_violation_though_the_current_one_runs() -> None:
    ends = [
        ProcessEnd("cluster-a.0", 1, ""),
        ProcessEnd("cluster-a.1", 0, "stop"),
    ]
    violations = check_exits(ends)
    assert [v.check for v in violations] == ["process-died"]
    assert "cluster-a.0 exited with 1, not killed" in violations[0].detail


def test_a_process_that_exited_before_its_planned_kill_is_a_violation() -> None:
    violations = check_exits([ProcessEnd("allocator-a.0", 1, "kill")])
    assert [v.check for v in violations] == ["process-died"]
    assert "before the planned kill" in violations[0].detail


def test_a_stop_answered_by_anything_but_status_0_is_a_violation() -> None:
    violations = check_exits([ProcessEnd("job-controller-b.2", -signal.SIGKILL, "stop")])
    assert [v.check for v in violations] == ["clean-stop"]

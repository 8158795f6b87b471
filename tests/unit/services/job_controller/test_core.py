"""``decide``: the job's life from admission to completion, kills, commands, updates, ids."""

from __future__ import annotations

from datetime import timedelta

import msgspec

from vcbus.contracts.events.jobs_status import JobDeleted, JobStatusChanged, TaskCounts
from vcbus.contracts.events.podgroups import PodGroupCreated, PodGroupDeleted, PodGroupUpdated
from vcbus.contracts.events.podgroups_status import PodGroupPhaseChanged
from vcbus.contracts.events.pods import PodCreated
from vcbus.contracts.objects.job import Job, JobPhase
from vcbus.contracts.objects.meta import Condition
from vcbus.contracts.objects.pod import PodPhase
from vcbus.contracts.objects.podgroup import PodGroupPhase
from vcbus.core.step import Ctx, Tick
from vcbus.services.job_controller.core import ControllerConf, decide, next_deadline

from .builders import (
    T0,
    Driver,
    admitted,
    build_job,
    build_task,
    deleted_pods,
    kinds,
    last_status,
    pods_of,
    policy,
    statuses,
    with_spec,
)

R = PodPhase.RUNNING
S = PodPhase.SUCCEEDED
F = PodPhase.FAILED


def _job(**kwargs: object) -> Job:
    return build_job(build_task("master", 1), build_task("worker", 2), **kwargs)  # type: ignore[arg-type]


# -- admission ---------------------------------------------------------------------------------


def test_new_job_is_pending_with_podgroup_created_when_admitted() -> None:
    driver = Driver(_job())
    emits = driver.admit()
    assert kinds(emits) == ["PodGroupCreated", "JobStatusChanged"]
    created = emits[0]
    assert isinstance(created, PodGroupCreated)
    assert created.podgroup.name == f"job-{driver.current.uid}"
    assert created.podgroup.min_member == 3
    status = last_status(emits)
    assert status.phase is JobPhase.PENDING
    assert status.previous_phase is None
    assert status.conditions[0].reason == "PodGroupPending"
    assert status.trace_id == "trace-1"
    assert status.min_available == 3


def test_same_spec_digest_is_a_no_op_when_admitted_again() -> None:
    driver = Driver(_job())
    driver.admit()
    before = driver.current
    assert driver.admit() == ()
    assert driver.current.pods == before.pods
    assert driver.current.last_status == before.last_status


def test_no_pod_is_created_when_podgroup_is_pending() -> None:
    driver = Driver(_job())
    driver.admit()
    emits = driver.podgroup(
        PodGroupPhase.PENDING, Condition(type="Unschedulable", reason="QueueOverCapability")
    )
    assert pods_of(emits) == []
    assert last_status(emits).conditions[0].message.endswith("Pending: QueueOverCapability")


# -- the happy path ----------------------------------------------------------------------------


def test_job_completes_when_all_pods_succeed_after_running() -> None:
    driver = Driver(_job())
    driver.admit()
    emits = driver.podgroup(PodGroupPhase.INQUEUE)
    assert pods_of(emits) == ["job-master-0", "job-worker-0", "job-worker-1"]
    assert last_status(emits).pending == 3
    assert last_status(emits).conditions[0].reason == "PodsPending"

    names = driver.pod_names()
    driver.pods(names, PodPhase.PENDING)  # bound
    emits = driver.pods(names, R)
    assert [s.phase for s in statuses(emits)][-1] is JobPhase.RUNNING
    assert driver.phase() == "Running"

    emits = driver.pods(names, S)
    final = last_status(emits)
    assert final.phase is JobPhase.COMPLETED
    assert final.previous_phase is JobPhase.RUNNING
    assert final.succeeded == 3
    assert final.task_status_count == {
        "master": TaskCounts(succeeded=1),
        "worker": TaskCounts(succeeded=2),
    }
    assert final.conditions[0].reason == "Completed"
    assert any(isinstance(e, PodGroupDeleted) for e in emits)
    assert deleted_pods(emits) == []


def test_pod_carries_volcano_labels_priority_and_template_annotations_when_created() -> None:
    task = build_task(
        "worker",
        1,
        cpu="250m",
        priority_class="high",
        annotations={"vcbus.io/run-seconds": "5", "vcbus.io/exit-code": "0"},
        spec_extra={
            "nodeSelector": {"zone": "a"},
            "tolerations": [{"key": "gpu", "operator": "Exists"}],
        },
    )
    driver = Driver(build_job(task), conf=ControllerConf(priority_classes={"high": 1000}))
    driver.start()
    pod = next(e.pod for e in driver.emitted if isinstance(e, PodCreated))
    assert pod.name == "job-worker-0"
    assert pod.requests == {"cpu": 250}
    assert pod.priority == 1000
    assert pod.node_selector == {"zone": "a"}
    assert [t.key for t in pod.tolerations] == ["gpu"]
    assert pod.podgroup == f"job-{driver.current.uid}"
    assert pod.annotations["scheduling.k8s.io/group-name"] == pod.podgroup
    assert pod.annotations["vcbus.io/run-seconds"] == "5"
    for key, value in {
        "volcano.sh/job-name": "job",
        "volcano.sh/task-spec": "worker",
        "volcano.sh/task-index": "0",
        "volcano.sh/queue-name": "default",
        "volcano.sh/job-version": "0",
        "volcano.sh/job-retry-count": "0",
    }.items():
        assert pod.labels[key] == value
        assert pod.annotations[key] == value


def test_pod_priority_is_one_when_no_class_and_annotation_overrides_it() -> None:
    plain = build_task("a")
    annotated = build_task("b", annotations={"volcano.sh/task-priority": "7"})
    driver = Driver(build_job(plain, annotated))
    driver.start()
    priorities = {e.pod.task: e.pod.priority for e in driver.emitted if isinstance(e, PodCreated)}
    assert priorities == {"a": 1, "b": 7}


def test_no_pod_is_created_twice_when_podgroup_phase_repeats() -> None:
    driver = Driver(_job())
    driver.start()
    assert driver.podgroup(PodGroupPhase.RUNNING) == ()
    assert driver.podgroup(PodGroupPhase.INQUEUE) == ()
    created = pods_of(driver.emitted)
    assert len(created) == len(set(created)) == 3


def test_status_is_not_emitted_when_pod_is_bound_without_count_change() -> None:
    driver = Driver(_job())
    driver.start()
    assert driver.pod("job-master-0", PodPhase.PENDING, node="n1") == ()
    assert driver.current.pod("job-master-0").node == "n1"  # type: ignore[union-attr]


def test_node_is_cleared_silently_when_binding_is_refused() -> None:
    driver = Driver(_job())
    driver.start()
    driver.pod("job-master-0", PodPhase.PENDING, node="n1")
    assert driver.refuse("job-master-0") == ()
    assert driver.current.pod("job-master-0").node is None  # type: ignore[union-attr]


# -- stale inputs --------------------------------------------------------------------------------


def test_stale_pod_status_changes_nothing_when_uid_is_not_current() -> None:
    driver = Driver(_job())
    driver.start()
    before = driver.current
    assert driver.pod("job-master-0", R, uid="old-uid") == ()
    assert driver.current == before


def test_nothing_changes_when_status_is_for_unknown_pod() -> None:
    driver = Driver(_job())
    driver.start()
    before = driver.current
    assert driver.feed(driver.pod_event("job-nope-0", R, task="nope")) == ()
    assert driver.current == before


def test_nothing_changes_when_phase_is_for_another_podgroup() -> None:
    driver = Driver(_job())
    driver.admit()
    before = driver.current
    event = PodGroupPhaseChanged(
        event_id="x",
        occurred_at=T0,
        job=driver.key,
        podgroup="job-other",
        phase=PodGroupPhase.INQUEUE,
    )
    assert driver.feed(event) == ()
    assert driver.current == before


def test_inputs_are_ignored_when_job_is_unknown() -> None:
    driver = Driver(_job())
    step = decide(None, Tick(now=T0), Ctx(now=T0), ControllerConf())
    assert step.state is None
    assert step.emit == ()
    # a delete of a job it does not hold (a rejected one) is answered JobDeleted, so the
    # readers stop listing the rejection; nothing else is made
    (deleted,) = driver.delete()
    assert isinstance(deleted, JobDeleted)
    assert deleted.job == driver.key
    assert driver.record is None


# -- restart, maxRetry --------------------------------------------------------------------------


def test_job_fails_with_retry_count_2_when_max_retry_2_and_pods_keep_failing() -> None:
    """volcano e2e: maxRetry 2 → Failed with retryCount 2 (Volcano's state/ Rule R, Volcano's
    state/restarting.go)."""
    job = build_job(build_task("a", 2), max_retry=2, policies=[policy("RestartJob", "PodFailed")])
    driver = Driver(job)
    driver.start()
    driver.pods(["job-a-0", "job-a-1"], R)
    assert driver.phase() == "Running"

    emits = driver.pod("job-a-0", F, exit_code=1)
    phases = [s.phase for s in statuses(emits)]
    assert phases == [JobPhase.RESTARTING, JobPhase.PENDING]
    assert sorted(deleted_pods(emits)) == ["job-a-0", "job-a-1"]
    assert kinds(emits).count("PodGroupDeleted") == 1
    assert kinds(emits).count("PodGroupCreated") == 1
    assert statuses(emits)[0].terminating == 2
    assert driver.current.retry_count == 1
    assert driver.current.version == 1

    emits = driver.podgroup(PodGroupPhase.INQUEUE)
    assert pods_of(emits) == ["job-a-0", "job-a-1"]
    new_pod = next(e.pod for e in emits if isinstance(e, PodCreated))
    assert new_pod.labels["volcano.sh/job-version"] == "1"
    assert new_pod.labels["volcano.sh/job-retry-count"] == "1"
    driver.pods(["job-a-0", "job-a-1"], R)

    emits = driver.pod("job-a-1", F, exit_code=1)
    final = last_status(emits)
    assert final.phase is JobPhase.FAILED
    assert final.retry_count == 2
    assert "maxRetry 2" in final.conditions[0].message
    # last retry: the failed pod is retained, the running one deleted.
    assert deleted_pods(emits) == ["job-a-0"]
    assert [p.name for p in driver.current.pods] == ["job-a-1"]


def test_late_status_is_ignored_when_its_pod_was_deleted_by_restart() -> None:
    job = build_job(build_task("a", 1), policies=[policy("RestartJob", "PodFailed")])
    driver = Driver(job)
    driver.start()
    old_uid = driver.current.pods[0].uid
    driver.pod("job-a-0", F, exit_code=1)
    driver.podgroup(PodGroupPhase.INQUEUE)
    assert driver.current.pods[0].uid != old_uid
    before = driver.current
    assert driver.pod("job-a-0", R, uid=old_uid) == ()
    assert driver.current == before


def test_only_that_task_is_restarted_and_podgroup_kept_when_restart_task_fires() -> None:
    job = build_job(
        build_task("a", 1, policies=[policy("RestartTask", "PodFailed")]),
        build_task("b", 1),
    )
    driver = Driver(job)
    driver.start()
    driver.pods(["job-a-0", "job-b-0"], R)
    emits = driver.pod("job-a-0", F, exit_code=2)
    assert deleted_pods(emits) == ["job-a-0"]
    assert "PodGroupDeleted" not in kinds(emits)
    assert pods_of(emits) == ["job-a-0"]  # re-created at once: the PodGroup is still Inqueue
    assert [s.phase for s in statuses(emits)] == [JobPhase.RESTARTING, JobPhase.PENDING]
    assert driver.current.version == 0
    assert driver.current.retry_count == 1


# -- commands --------------------------------------------------------------------------------------


def test_live_pods_are_killed_and_job_aborted_when_abort_command_arrives() -> None:
    driver = Driver(_job())
    driver.start()
    driver.pod("job-master-0", R)
    driver.pod("job-worker-0", S)
    emits = driver.abort()
    assert sorted(deleted_pods(emits)) == ["job-master-0", "job-worker-1"]
    assert [s.phase for s in statuses(emits)] == [JobPhase.ABORTING, JobPhase.ABORTED]
    assert statuses(emits)[0].terminating == 2
    assert "PodGroupDeleted" in kinds(emits)
    assert [p.name for p in driver.current.pods] == ["job-worker-0"]


def test_abort_again_changes_nothing_when_already_aborted() -> None:
    driver = Driver(_job())
    driver.start()
    driver.abort()
    assert driver.abort() == ()


def test_aborted_job_restarts_with_a_retry_counted_when_resume_command_arrives() -> None:
    """Volcano's state/: Aborted + ResumeJob → full kill (Soft), retryCount+1 → Restarting."""
    driver = Driver(_job())
    driver.start()
    driver.pod("job-worker-0", S)
    driver.abort()
    emits = driver.resume()
    assert [s.phase for s in statuses(emits)] == [JobPhase.RESTARTING, JobPhase.PENDING]
    assert "PodGroupCreated" in kinds(emits)
    assert driver.current.retry_count == 1
    assert sorted(pods_of(driver.podgroup(PodGroupPhase.INQUEUE))) == [
        "job-master-0",
        "job-worker-1",
    ]


def test_resume_changes_nothing_but_a_sync_when_the_job_runs() -> None:
    """Volcano's state/: Running + ResumeJob is "other": a sync, no restart."""
    driver = Driver(_job())
    driver.start()
    driver.pods(["job-master-0", "job-worker-0", "job-worker-1"], R)
    emits = driver.resume()
    assert deleted_pods(emits) == []
    assert driver.current.phase is JobPhase.RUNNING
    assert driver.current.retry_count == 0


def test_pods_podgroup_and_job_are_deleted_when_delete_command_arrives() -> None:
    driver = Driver(_job())
    driver.start()
    driver.pod("job-master-0", S)
    emits = driver.delete()
    assert sorted(deleted_pods(emits)) == ["job-master-0", "job-worker-0", "job-worker-1"]
    assert kinds(emits)[-2:] == ["PodGroupDeleted", "JobDeleted"]
    assert isinstance(emits[-1], JobDeleted)
    assert driver.record is None


# -- updates (Volcano's admit_job.go) --------------------------------------------------------------


def test_scale_up_creates_new_pods_and_updates_podgroup_when_replicas_grow() -> None:
    job = build_job(build_task("a", 2))
    driver = Driver(job)
    driver.start()
    bigger = with_spec(job, tasks=(build_task("a", 3),), min_available=3)
    emits = driver.feed(admitted(bigger, "digest-2"))
    assert pods_of(emits) == ["job-a-2"]
    updated = [e for e in emits if isinstance(e, PodGroupUpdated)]
    assert len(updated) == 1
    assert updated[0].podgroup.min_member == 3
    assert last_status(emits).min_available == 3


def test_scale_down_deletes_pods_beyond_replicas_when_replicas_shrink() -> None:
    job = build_job(build_task("a", 3))
    driver = Driver(job)
    driver.start()
    smaller = with_spec(job, tasks=(build_task("a", 1),), min_available=1)
    emits = driver.feed(admitted(smaller, "digest-2"))
    assert deleted_pods(emits) == ["job-a-1", "job-a-2"]
    assert driver.pod_names() == ["job-a-0"]


def test_update_is_rejected_with_volcano_message_when_queue_changes() -> None:
    job = build_job(build_task("a", 2))
    driver = Driver(job)
    driver.start()
    before = driver.current
    moved = with_spec(job, queue="other")
    emits = driver.feed(admitted(moved, "digest-2"))
    assert kinds(emits) == ["JobStatusChanged"]
    status = emits[0]
    assert isinstance(status, JobStatusChanged)
    rejected = [c for c in status.conditions if c.reason == "UpdateRejected"]
    assert rejected[0].message == (
        "job updates may not change fields other than `minAvailable`, "
        "`tasks[*].replicas under spec` and `PriorityClassName`"
    )
    assert driver.current.job == before.job
    assert driver.current.spec_digest == before.spec_digest
    assert driver.feed(admitted(moved, "digest-2")) == ()


def test_update_is_rejected_when_tasks_are_added() -> None:
    job = build_job(build_task("a", 2))
    driver = Driver(job)
    driver.admit()
    emits = driver.feed(
        admitted(with_spec(job, tasks=(build_task("a", 2), build_task("b"))), "digest-2")
    )
    assert last_status(emits).conditions[-1].message == "job updates may not add or remove tasks"


# -- policies through decide -----------------------------------------------------------------------


def test_exit_code_policy_terminates_job_when_pod_exits_with_that_code() -> None:
    job = build_job(
        build_task("a", 2, policies=[policy("TerminateJob", exit_code=3)]),
        policies=[policy("RestartJob", "PodFailed")],
    )
    driver = Driver(job)
    driver.start()
    driver.pods(["job-a-0", "job-a-1"], R)
    emits = driver.pod("job-a-0", F, exit_code=3)
    assert [s.phase for s in statuses(emits)] == [JobPhase.TERMINATING, JobPhase.TERMINATED]
    assert deleted_pods(emits) == ["job-a-1"]


def test_job_level_policy_applies_when_exit_code_differs() -> None:
    job = build_job(
        build_task("a", 2, policies=[policy("TerminateJob", exit_code=3)]),
        policies=[policy("RestartJob", "PodFailed")],
    )
    driver = Driver(job)
    driver.start()
    driver.pods(["job-a-0", "job-a-1"], R)
    emits = driver.pod("job-a-0", F, exit_code=4)
    assert statuses(emits)[0].phase is JobPhase.RESTARTING


def test_delayed_policy_fires_at_deadline_when_pod_stays_failed() -> None:
    job = build_job(build_task("a", 2), policies=[policy("RestartJob", "PodFailed", timeout="30s")])
    driver = Driver(job)
    driver.start()
    driver.pods(["job-a-0", "job-a-1"], R)
    assert driver.pod("job-a-0", F, exit_code=1) == ()
    deadline = next_deadline(driver.current)
    assert deadline is not None
    assert (deadline - driver.now).total_seconds() == 30
    assert driver.tick(10) == ()
    emits = driver.tick(20)
    assert statuses(emits)[0].phase is JobPhase.RESTARTING
    assert next_deadline(driver.current) is None


def test_delayed_policy_is_cancelled_when_pod_runs_again() -> None:
    job = build_job(build_task("a", 2), policies=[policy("RestartJob", "PodFailed", timeout="30s")])
    driver = Driver(job)
    driver.start()
    driver.pods(["job-a-0", "job-a-1"], R)
    driver.pod("job-a-0", F, exit_code=1)
    driver.pod("job-a-0", R)
    assert next_deadline(driver.current) is None
    assert driver.tick(60) == ()
    assert driver.phase() == "Running"


def test_pending_timeout_policy_restarts_job_when_pod_stays_pending() -> None:
    job = build_job(build_task("a", 1), policies=[policy("RestartJob", "PodPending", timeout="1m")])
    driver = Driver(job)
    driver.start()
    assert next_deadline(driver.current) == driver.now + timedelta(minutes=1)
    emits = driver.tick(61)
    assert statuses(emits)[0].phase is JobPhase.RESTARTING
    assert statuses(emits)[0].retry_count == 1


def test_pending_timeout_is_cancelled_when_pod_runs() -> None:
    job = build_job(build_task("a", 1), policies=[policy("RestartJob", "PodPending", timeout="1m")])
    driver = Driver(job)
    driver.start()
    driver.pod("job-a-0", R)
    assert driver.tick(120) == ()
    assert driver.phase() == "Running"


def test_unknown_podgroup_restarts_job_when_policy_says_so_before_first_kill() -> None:
    job = build_job(build_task("a", 1), policies=[policy("RestartJob", "Unknown")])
    driver = Driver(job)
    driver.start()
    driver.pod("job-a-0", R)
    emits = driver.podgroup(PodGroupPhase.UNKNOWN)
    assert statuses(emits)[0].phase is JobPhase.RESTARTING


def test_unknown_podgroup_only_syncs_when_job_was_fully_killed_before() -> None:
    job = build_job(build_task("a", 1), policies=[policy("RestartJob", "Unknown", "PodFailed")])
    driver = Driver(job)
    driver.start()
    driver.pod("job-a-0", F, exit_code=1)  # restart #1: version 1
    driver.podgroup(PodGroupPhase.INQUEUE)
    driver.pod("job-a-0", R)
    emits = driver.podgroup(PodGroupPhase.UNKNOWN)
    assert JobPhase.RESTARTING not in [s.phase for s in statuses(emits)]
    assert driver.current.retry_count == 1


def test_task_completed_policy_completes_job_when_every_replica_of_task_succeeded() -> None:
    job = build_job(
        build_task("a", 2, policies=[policy("CompleteJob", "TaskCompleted")]),
        build_task("b", 1),
    )
    driver = Driver(job)
    driver.start()
    driver.pods(["job-a-0", "job-a-1", "job-b-0"], R)
    assert JobPhase.COMPLETING not in [s.phase for s in statuses(driver.pod("job-a-0", S))]
    emits = driver.pod("job-a-1", S)
    assert [s.phase for s in statuses(emits)] == [JobPhase.COMPLETING, JobPhase.COMPLETED]
    assert deleted_pods(emits) == ["job-b-0"]


def test_task_failed_event_aborts_job_when_restarts_reach_task_max_retry() -> None:
    job = build_job(build_task("a", 1, max_retry=2, policies=[policy("AbortJob", "TaskFailed")]))
    driver = Driver(job)
    driver.start()
    driver.pod("job-a-0", R)
    emits = driver.pod("job-a-0", R, restarts=2)
    assert statuses(emits)[0].phase is JobPhase.ABORTING


# -- event ids -----------------------------------------------------------------------------------


def test_event_ids_are_identical_when_a_step_is_rerun_from_the_same_record() -> None:
    driver = Driver(_job())
    driver.admit()
    record = driver.current
    assert record.podgroup is not None
    inqueue = PodGroupPhaseChanged(
        event_id="pg-1",
        occurred_at=T0,
        job=driver.key,
        podgroup=record.podgroup.name,
        phase=PodGroupPhase.INQUEUE,
    )
    first = decide(record, inqueue, Ctx(now=T0), ControllerConf())
    again = decide(record, inqueue, Ctx(now=T0), ControllerConf())
    assert [e.event_id for e in first.emit] == [e.event_id for e in again.emit]
    assert first.state == again.state


def test_event_ids_are_distinct_when_job_restarts_completes_and_is_deleted() -> None:
    job = build_job(build_task("a", 2), policies=[policy("RestartJob", "PodFailed")])
    driver = Driver(job)
    driver.start()
    driver.pods(["job-a-0", "job-a-1"], R)
    driver.pod("job-a-0", F, exit_code=1)
    driver.podgroup(PodGroupPhase.INQUEUE)
    driver.pods(["job-a-0", "job-a-1"], R)
    driver.pods(["job-a-0", "job-a-1"], S)
    driver.delete()
    ids = [e.event_id for e in driver.emitted]
    assert len(ids) == len(set(ids))


def test_each_pod_carries_the_digest_of_the_admitted_manifest_it_was_made_from() -> None:
    # its binding names that very spec, which a node agent checks against admission's
    # signature (docs/security.md)
    driver = Driver(_job())
    driver.feed(msgspec.structs.replace(admitted(driver.job), manifest_digest="a" * 64))
    emits = driver.podgroup(PodGroupPhase.INQUEUE)
    created = [e.pod for e in emits if isinstance(e, PodCreated)]
    assert created
    assert {pod.admitted_digest for pod in created} == {"a" * 64}

    scaled = build_job(build_task("master", 1), build_task("worker", 3), min_available=3)
    emits = driver.feed(
        msgspec.structs.replace(admitted(scaled, "digest-2"), manifest_digest="b" * 64)
    )
    assert driver.current.admitted_digest == "b" * 64
    added = [e.pod for e in emits if isinstance(e, PodCreated)]
    assert [pod.name for pod in added] == ["job-worker-2"]
    assert added[0].admitted_digest == "b" * 64

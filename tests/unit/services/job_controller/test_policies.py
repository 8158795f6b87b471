"""Lifecycle policies (Volcano's job_controller_util.go): action resolution, exit codes, timeouts
and their timers.

The resolution cases follow volcano ``pkg/controllers/job/job_controller_util_test.go``
``TestApplyPolicies`` and extend it with the rules Volcano's job_controller_util.go lists.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta

import pytest

from vcbus.contracts.keys import JobKey
from vcbus.contracts.objects.job import Job, LifecyclePolicy
from vcbus.services.job_controller.policies import (
    Action,
    PolicyEvent,
    Request,
    Resolution,
    add_timer,
    cancel_for_pod_event,
    cancel_same_scope,
    keep_current,
    next_deadline,
    parse_duration,
    resolve_action,
)
from vcbus.services.job_controller.state import JobRecord, PolicyTimer

from .builders import T0, build_job, build_task, policy

E = PolicyEvent


def _job(
    task_policies: Iterable[LifecyclePolicy] = (), job_policies: Iterable[LifecyclePolicy] = ()
) -> Job:
    return build_job(build_task("task1", 6, policies=task_policies), policies=job_policies)


def test_explicit_action_wins_when_request_carries_one() -> None:
    job = _job(job_policies=[policy("RestartJob", "*")])
    request = Request(event=E.COMMAND_ISSUED, action=Action.ABORT_JOB)
    assert resolve_action(job, request, 0).action is Action.ABORT_JOB


@pytest.mark.parametrize("event", [E.OUT_OF_SYNC, E.COMMAND_ISSUED, E.POD_RUNNING, None])
def test_internal_or_absent_event_syncs_when_policies_would_match(
    event: PolicyEvent | None,
) -> None:
    job = _job(job_policies=[policy("RestartJob", "*")])
    assert resolve_action(job, Request(event=event, task="task1"), 0).action is Action.SYNC_JOB


def test_outdated_request_syncs_when_raised_under_older_job_version() -> None:
    job = _job(job_policies=[policy("RestartJob", "PodFailed")])
    request = Request(event=E.POD_FAILED, task="task1", version=1)
    assert resolve_action(job, request, 2).action is Action.SYNC_JOB


def test_task_policy_wins_when_task_and_job_policies_both_match() -> None:
    job = _job(
        task_policies=[policy("RestartTask", "PodFailed")],
        job_policies=[policy("RestartJob", "PodFailed")],
    )
    request = Request(event=E.POD_FAILED, task="task1", version=0)
    assert resolve_action(job, request, 0).action is Action.RESTART_TASK


def test_job_policy_applies_when_task_policies_do_not_match() -> None:
    job = _job(
        task_policies=[policy("RestartTask", "PodEvicted")],
        job_policies=[policy("AbortJob", "PodFailed")],
    )
    request = Request(event=E.POD_FAILED, task="task1", version=0)
    assert resolve_action(job, request, 0).action is Action.ABORT_JOB


def test_any_event_policy_matches_when_event_is_not_internal() -> None:
    job = _job(job_policies=[policy("TerminateJob", "*")])
    assert resolve_action(job, Request(event=E.POD_EVICTED), 0).action is Action.TERMINATE_JOB


def test_each_listed_event_matches_when_policy_has_event_list() -> None:
    job = _job(job_policies=[policy("RestartJob", "PodFailed", "PodEvicted")])
    for event in (E.POD_FAILED, E.POD_EVICTED):
        assert resolve_action(job, Request(event=event), 0).action is Action.RESTART_JOB
    assert resolve_action(job, Request(event=E.TASK_COMPLETED), 0).action is Action.SYNC_JOB


def test_pod_pending_matches_only_when_policy_has_timeout() -> None:
    without = _job(job_policies=[policy("RestartJob", "PodPending")])
    with_timeout = _job(job_policies=[policy("RestartJob", "PodPending", timeout="5m")])
    any_event = _job(job_policies=[policy("RestartJob", "*")])
    request = Request(event=E.POD_PENDING, task="task1")
    assert resolve_action(without, request, 0).action is Action.SYNC_JOB
    assert resolve_action(any_event, request, 0).action is Action.SYNC_JOB
    resolution = resolve_action(with_timeout, request, 0)
    assert resolution.action is Action.RESTART_JOB
    assert resolution.delay == timedelta(minutes=5)


def test_exit_code_policy_matches_when_failed_pod_exit_code_equals() -> None:
    job = _job(task_policies=[policy("AbortJob", exit_code=137)])
    failed = Request(event=E.POD_FAILED, task="task1", exit_code=137)
    other = Request(event=E.POD_FAILED, task="task1", exit_code=1)
    assert resolve_action(job, failed, 0).action is Action.ABORT_JOB
    assert resolve_action(job, other, 0).action is Action.SYNC_JOB


def test_exit_code_policy_does_not_match_when_pod_did_not_fail() -> None:
    job = _job(job_policies=[policy("AbortJob", exit_code=1)])
    assert (
        resolve_action(job, Request(event=E.TASK_COMPLETED, task="task1"), 0).action
        is Action.SYNC_JOB
    )


def test_unknown_action_text_syncs_when_policy_matches() -> None:
    job = _job(job_policies=[policy("EnqueueJob", "PodFailed")])
    assert resolve_action(job, Request(event=E.POD_FAILED), 0).action is Action.SYNC_JOB


def test_action_is_delayed_when_matched_policy_has_timeout() -> None:
    job = _job(job_policies=[policy("RestartJob", "PodFailed", timeout="1m30s")])
    resolution = resolve_action(job, Request(event=E.POD_FAILED), 0)
    assert resolution.action is Action.RESTART_JOB
    assert resolution.delay == timedelta(seconds=90)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("30s", timedelta(seconds=30)),
        ("1m30s", timedelta(seconds=90)),
        ("1.5h", timedelta(minutes=90)),
        ("500ms", timedelta(milliseconds=500)),
        ("2h45m", timedelta(hours=2, minutes=45)),
        ("", None),
        ("0", None),
        ("10", None),
        ("5 minutes", None),
        ("m", None),
    ],
)
def test_go_duration_parses_when_written_as_metav1_duration(
    text: str, expected: timedelta | None
) -> None:
    assert parse_duration(text) == expected


# -- timers ---------------------------------------------------------------------------------------


def _timer(
    pod: str, action: str = "RestartJob", event: str = "PodFailed", **kw: object
) -> PolicyTimer:
    values: dict[str, object] = {"task": "task1", "pod_uid": f"{pod}-uid", "version": 0}
    values.update(kw)
    return PolicyTimer(deadline=T0, action=action, event=event, pod=pod, **values)  # type: ignore[arg-type]


def _resolution(action: Action, seconds: int) -> Resolution:
    job = _job(job_policies=[policy(action.value, "PodFailed", timeout=f"{seconds}s")])
    return resolve_action(job, Request(event=E.POD_FAILED), 0)


def test_timer_keeps_first_deadline_when_same_pod_and_action_fail_again() -> None:
    request = Request(event=E.POD_FAILED, task="task1", pod="p0", pod_uid="u0")
    first = add_timer((), request, _resolution(Action.RESTART_JOB, 30), T0, 0)
    again = add_timer(
        first, request, _resolution(Action.RESTART_JOB, 30), T0 + timedelta(seconds=10), 0
    )
    assert again == first
    assert first[0].deadline == T0 + timedelta(seconds=30)


def test_timer_is_replaced_when_same_pod_resolves_another_action() -> None:
    request = Request(event=E.POD_FAILED, task="task1", pod="p0", pod_uid="u0")
    first = add_timer((), request, _resolution(Action.RESTART_JOB, 30), T0, 0)
    other = add_timer(first, request, _resolution(Action.ABORT_JOB, 60), T0, 0)
    assert [t.action for t in other] == ["AbortJob"]


def test_pending_timer_is_cancelled_when_same_pod_raises_another_event() -> None:
    timers = (_timer("p0", event="PodPending", pod_uid="u0"),)
    running = Request(event=E.POD_RUNNING, pod="p0", pod_uid="u0")
    other_uid = Request(event=E.POD_RUNNING, pod="p0", pod_uid="u1")
    assert cancel_for_pod_event(timers, running) == ()
    assert cancel_for_pod_event(timers, other_uid) == timers
    assert (
        cancel_for_pod_event(timers, Request(event=E.POD_PENDING, pod="p0", pod_uid="u0")) == timers
    )


def test_failed_timer_is_cancelled_only_when_pod_runs_again() -> None:
    timers = (_timer("p0", event="PodFailed"),)
    assert cancel_for_pod_event(timers, Request(event=E.POD_RUNNING, pod="p0")) == ()
    assert cancel_for_pod_event(timers, Request(event=E.POD_FAILED, pod="p0")) == timers
    assert cancel_for_pod_event(timers, Request(event=E.POD_RUNNING, pod="p1")) == timers


def test_only_job_scope_timers_are_cancelled_when_job_action_runs() -> None:
    timers = (
        _timer("p0", action="RestartJob"),
        _timer("p1", action="AbortJob"),
        _timer("p2", action="RestartTask"),
        _timer("p3", action="RestartPod"),
    )
    left = cancel_same_scope(timers, Action.RESTART_JOB, Request(event=E.POD_FAILED, pod="p9"))
    assert [t.pod for t in left] == ["p2", "p3"]


def test_timers_of_same_task_are_cancelled_when_task_action_runs() -> None:
    timers = (
        _timer("p0", action="RestartTask", task="a"),
        _timer("p1", action="RestartTask", task="b"),
    )
    left = cancel_same_scope(timers, Action.RESTART_TASK, Request(task="a", pod="p0"))
    assert [t.task for t in left] == ["b"]


def test_timers_of_same_pod_are_cancelled_when_pod_action_runs() -> None:
    timers = (_timer("p0", action="RestartPod"), _timer("p1", action="RestartPod"))
    left = cancel_same_scope(timers, Action.RESTART_POD, Request(pod="p0", pod_uid="p0-uid"))
    assert [t.pod for t in left] == ["p1"]


def test_timers_of_older_versions_are_dropped_when_version_changes() -> None:
    timers = (_timer("p0", version=0), _timer("p1", version=1))
    assert [t.pod for t in keep_current(timers, 1)] == ["p1"]


def test_next_deadline_is_earliest_timer_when_timers_are_pending() -> None:
    job = _job()
    record = JobRecord(
        job_key=JobKey("default/job"), job=job, spec_digest="d", uid="u", created_at=T0
    )
    assert next_deadline(None) is None
    assert next_deadline(record) is None
    late = PolicyTimer(
        deadline=T0 + timedelta(minutes=5), action="RestartJob", event="PodFailed", pod="a"
    )
    early = PolicyTimer(
        deadline=T0 + timedelta(minutes=1), action="RestartJob", event="PodFailed", pod="b"
    )
    record = JobRecord(
        job_key=JobKey("default/job"),
        job=job,
        spec_digest="d",
        uid="u",
        created_at=T0,
        timers=(late, early),
    )
    assert next_deadline(record) == T0 + timedelta(minutes=1)

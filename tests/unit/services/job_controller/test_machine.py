"""The phase machine: every row of Volcano's state/, Rule R, every case of B2.3 (with
docs/design.md#task-level-gang).

Ported from volcano ``pkg/controllers/job/state/*_test.go`` (pending, running, restarting,
aborting, aborted, completing, terminating, finished) as the table of Volcano's state/ states it.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from vcbus.contracts.events.jobs_status import TaskCounts
from vcbus.contracts.objects.job import Job, JobPhase
from vcbus.services.job_controller.machine import (
    RETAIN_NONE,
    RETAIN_SOFT,
    Counts,
    Operation,
    Plan,
    Rule,
    effective_retain,
    evaluate,
    evaluate_pending,
    evaluate_restarting,
    evaluate_running,
    plan,
)
from vcbus.services.job_controller.policies import Action

from .builders import build_job, build_task, with_spec

P = JobPhase
A = Action
OTHER = (A.SYNC_JOB,)
TARGETED = (A.RESTART_TASK, A.RESTART_POD, A.RESTART_PARTITION)
FULL_TO_RESTARTING = Plan(
    Operation.FULL_KILL, Rule.SET, RETAIN_NONE, P.RESTARTING, count_retry=True
)
TARGETED_TO_RESTARTING = Plan(
    Operation.TARGETED_KILL, Rule.SET, RETAIN_NONE, P.RESTARTING, count_retry=True
)


@dataclass(frozen=True)
class Cell:
    phase: JobPhase
    action: Action
    expected: Plan

    @property
    def name(self) -> str:
        return f"{self.phase}+{self.action}"


def _cells() -> list[Cell]:
    cells: list[Cell] = []
    for phase in (P.PENDING, P.RUNNING):
        cells.append(Cell(phase, A.RESTART_JOB, FULL_TO_RESTARTING))
        cells += [Cell(phase, action, TARGETED_TO_RESTARTING) for action in TARGETED]
        cells.append(
            Cell(phase, A.ABORT_JOB, Plan(Operation.FULL_KILL, Rule.SET, RETAIN_SOFT, P.ABORTING))
        )
        cells.append(
            Cell(
                phase,
                A.COMPLETE_JOB,
                Plan(Operation.FULL_KILL, Rule.SET, RETAIN_SOFT, P.COMPLETING),
            )
        )
        cells.append(
            Cell(
                phase,
                A.TERMINATE_JOB,
                Plan(Operation.FULL_KILL, Rule.SET, RETAIN_SOFT, P.TERMINATING),
            )
        )
        rule = Rule.PENDING if phase is P.PENDING else Rule.RUNNING
        cells += [
            Cell(phase, action, Plan(Operation.SYNC, rule)) for action in (A.SYNC_JOB, A.RESUME_JOB)
        ]
    cells.append(Cell(P.RESTARTING, A.SYNC_JOB, Plan(Operation.SYNC, Rule.RESTARTING)))
    cells += [
        Cell(P.RESTARTING, action, Plan(Operation.TARGETED_KILL, Rule.RESTARTING))
        for action in TARGETED
    ]
    cells += [
        Cell(P.RESTARTING, action, Plan(Operation.FULL_KILL, Rule.RESTARTING, RETAIN_NONE))
        for action in (A.RESTART_JOB, A.ABORT_JOB, A.TERMINATE_JOB, A.COMPLETE_JOB, A.RESUME_JOB)
    ]
    resume = Plan(Operation.FULL_KILL, Rule.SET, RETAIN_SOFT, P.RESTARTING, count_retry=True)
    for phase in (P.ABORTING, P.ABORTED):
        cells.append(Cell(phase, A.RESUME_JOB, resume))
    for action in (A.SYNC_JOB, A.ABORT_JOB, A.RESTART_JOB):
        cells.append(
            Cell(
                P.ABORTING, action, Plan(Operation.FULL_KILL, Rule.DRAINED, RETAIN_SOFT, P.ABORTED)
            )
        )
        cells.append(Cell(P.ABORTED, action, Plan(Operation.FULL_KILL, Rule.KEEP, RETAIN_SOFT)))
    for action in (A.SYNC_JOB, A.RESTART_JOB, A.RESUME_JOB):
        cells.append(
            Cell(
                P.COMPLETING,
                action,
                Plan(Operation.FULL_KILL, Rule.DRAINED, RETAIN_SOFT, P.COMPLETED),
            )
        )
        cells.append(
            Cell(
                P.TERMINATING,
                action,
                Plan(Operation.FULL_KILL, Rule.DRAINED, RETAIN_SOFT, P.TERMINATED),
            )
        )
        for phase in (P.COMPLETED, P.FAILED, P.TERMINATED):
            cells.append(Cell(phase, action, Plan(Operation.FULL_KILL, Rule.KEEP, RETAIN_SOFT)))
    return cells


@pytest.mark.parametrize("cell", _cells(), ids=lambda cell: cell.name)
def test_plan_matches_b22_row_when_action_runs_in_phase(cell: Cell) -> None:
    assert plan(cell.phase, cell.action) == cell.expected


# -- retain sets ---------------------------------------------------------------------------


def test_kill_retains_finished_pods_when_it_is_the_last_retry() -> None:
    job = build_job(build_task("a"), max_retry=3)
    assert effective_retain(RETAIN_NONE, 2, job) == RETAIN_SOFT


def test_kill_retains_nothing_when_retries_remain() -> None:
    job = build_job(build_task("a"), max_retry=3)
    assert effective_retain(RETAIN_NONE, 1, job) == RETAIN_NONE


# -- Pending + sync --------------------------------------------------------------------------


def test_pending_job_runs_when_min_available_pods_started() -> None:
    job = build_job(build_task("a", 3), min_available=2)
    verdict = evaluate_pending(job, Counts(running=1, failed=1, pending=1))
    assert verdict is not None
    assert verdict.phase is P.RUNNING


def test_pending_job_stays_when_fewer_than_min_available_pods_started() -> None:
    job = build_job(build_task("a", 3), min_available=2)
    assert evaluate_pending(job, Counts(running=1, pending=2)) is None


def test_pending_job_stays_when_a_task_minimum_has_not_started_a4() -> None:
    job = build_job(
        build_task("a", 2, min_available=1), build_task("b", 2, min_available=1), min_available=2
    )
    counts = Counts(
        running=2, pending=2, tasks={"a": TaskCounts(running=2), "b": TaskCounts(pending=2)}
    )
    assert evaluate_pending(job, counts) is None


def test_pending_job_runs_when_only_tasks_without_pods_lack_their_minimum_a5() -> None:
    job = build_job(
        build_task("a", 1, min_available=1), build_task("b", 2, min_available=1, depends_on=["a"])
    )
    counts = Counts(running=1, tasks={"a": TaskCounts(running=1)})
    verdict = evaluate_pending(with_spec(job, min_available=1), counts)
    assert verdict is not None
    assert verdict.phase is P.RUNNING


# -- Running + sync (Volcano's state/running.go) ---------------------------------------------------


def _two_tasks(**spec: object) -> Job:
    job = build_job(
        build_task("a", 2, min_available=1), build_task("b", 2, min_available=1), min_available=2
    )
    return with_spec(job, **spec) if spec else job


def test_running_job_keeps_phase_when_scaled_to_zero_replicas() -> None:
    """Volcano's state/running.go case 1."""
    job = build_job(build_task("a", 0), min_available=0)
    assert evaluate_running(job, Counts()) is None


def test_running_job_completes_when_min_success_reached_with_pods_still_running() -> None:
    """Volcano's state/running.go case 2."""
    verdict = evaluate_running(_two_tasks(min_success=2), Counts(succeeded=2, running=2))
    assert verdict is not None
    assert (verdict.phase, verdict.reason) == (P.COMPLETED, "Completed")


def test_running_job_fails_when_all_finished_and_a_task_missed_its_minimum() -> None:
    """Volcano's state/running.go case 3a (with docs/design.md#task-level-gang)."""
    counts = Counts(
        succeeded=2, failed=2, tasks={"a": TaskCounts(succeeded=2), "b": TaskCounts(failed=2)}
    )
    verdict = evaluate_running(_two_tasks(), counts)
    assert verdict is not None
    assert verdict.phase is P.FAILED
    assert "task b" in verdict.message


def test_task_minimum_is_checked_when_job_minimum_is_below_task_total_a4() -> None:
    """docs/design.md#task-level-gang: Volcano checks task minimums only when M ≥ T; vcbus whenever
    a task has one."""
    job = build_job(
        build_task("a", 2, min_available=2), build_task("b", 2, min_available=2), min_available=1
    )
    counts = Counts(
        succeeded=3,
        failed=1,
        tasks={"a": TaskCounts(succeeded=2), "b": TaskCounts(succeeded=1, failed=1)},
    )
    verdict = evaluate_running(job, counts)
    assert verdict is not None
    assert verdict.phase is P.FAILED


def test_running_job_fails_when_all_finished_below_min_success() -> None:
    """Volcano's state/running.go case 3b."""
    job = with_spec(build_job(build_task("a", 4), min_available=1), min_success=3)
    verdict = evaluate_running(
        job, Counts(succeeded=2, failed=2, tasks={"a": TaskCounts(succeeded=2, failed=2)})
    )
    assert verdict is not None
    assert verdict.phase is P.FAILED
    assert "minSuccess 3" in verdict.message


def test_running_job_completes_when_all_finished_and_min_available_succeeded() -> None:
    """Volcano's state/running.go case 3c."""
    job = build_job(build_task("a", 4), min_available=2)
    verdict = evaluate_running(
        job, Counts(succeeded=2, failed=2, tasks={"a": TaskCounts(succeeded=2, failed=2)})
    )
    assert verdict is not None
    assert verdict.phase is P.COMPLETED


def test_running_job_fails_when_all_finished_and_fewer_than_min_available_succeeded() -> None:
    """Volcano's state/running.go case 3d."""
    job = build_job(build_task("a", 4), min_available=3)
    verdict = evaluate_running(
        job, Counts(succeeded=2, failed=2, tasks={"a": TaskCounts(succeeded=2, failed=2)})
    )
    assert verdict is not None
    assert verdict.phase is P.FAILED
    assert "fewer than minAvailable 3" in verdict.message


def test_running_job_falls_back_to_pending_when_too_many_pods_pending() -> None:
    """Volcano's state/running.go case 4: pending > replicas − minAvailable."""
    job = build_job(build_task("a", 4), min_available=3)
    verdict = evaluate_running(job, Counts(pending=2, running=2))
    assert verdict is not None
    assert verdict.phase is P.PENDING


def test_running_job_stays_running_when_enough_pods_run() -> None:
    """Volcano's state/running.go case 5."""
    job = build_job(build_task("a", 4), min_available=3)
    assert evaluate_running(job, Counts(pending=1, running=3)) is None


# -- Restarting (Rule R) -----------------------------------------------------------------------


def test_restarting_job_fails_when_retry_count_reaches_max_retry() -> None:
    job = build_job(build_task("a", 2), max_retry=2)
    verdict = evaluate_restarting(job, Counts(), retry_count=2)
    assert verdict is not None
    assert verdict.phase is P.FAILED


def test_restarting_job_goes_pending_when_enough_pods_are_gone() -> None:
    job = build_job(build_task("a", 3), min_available=2, max_retry=3)
    verdict = evaluate_restarting(job, Counts(terminating=1), retry_count=1)
    assert verdict is not None
    assert verdict.phase is P.PENDING


def test_restarting_job_stays_when_too_many_pods_still_terminate() -> None:
    job = build_job(build_task("a", 3), min_available=2, max_retry=3)
    assert evaluate_restarting(job, Counts(terminating=2), retry_count=1) is None


# -- drained / set / keep -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("phase", "target"),
    [(P.ABORTING, P.ABORTED), (P.COMPLETING, P.COMPLETED), (P.TERMINATING, P.TERMINATED)],
)
def test_stopping_job_reaches_final_phase_when_no_pod_is_alive(
    phase: JobPhase, target: JobPhase
) -> None:
    job = build_job(build_task("a", 2))
    cell = plan(phase, A.SYNC_JOB)
    verdict = evaluate(cell.rule, cell.target, job, Counts(succeeded=1, failed=1), 0)
    assert verdict is not None
    assert verdict.phase is target


@pytest.mark.parametrize("alive", [Counts(terminating=1), Counts(pending=1), Counts(running=1)])
def test_stopping_job_stays_when_a_pod_is_alive(alive: Counts) -> None:
    job = build_job(build_task("a", 2))
    cell = plan(P.ABORTING, A.SYNC_JOB)
    assert evaluate(cell.rule, cell.target, job, alive, 0) is None


def test_finished_job_keeps_phase_when_any_action_runs() -> None:
    job = build_job(build_task("a", 2))
    cell = plan(P.COMPLETED, A.RESTART_JOB)
    assert evaluate(cell.rule, cell.target, job, Counts(), 0) is None

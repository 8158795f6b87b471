"""Will-bind at allocate: release what is no longer due, then reserve room for later stages.

Allocate's part of will-bind (``framework.will_bind`` describes the feature and holds the
ledger): at its start, ``refresh`` releases the reservations that are no longer due
(``JobEnded``, ``JobDeleted``, ``WillBindDisabled``, ``NotNeeded``, ``StageBound``,
``WillBindTimeout``) and reserves for every eligible job; after a job's statement commits,
``reserve_stages`` reserves for that job. Both place phantoms with the session's node choice
(``Session.place``), so they read the whole session.
"""

from __future__ import annotations

from vcbus.contracts.objects.job import ANNOTATION_WILL_BIND
from vcbus.contracts.objects.podgroup import PodGroupPhase, StageTask
from vcbus.core.reasons import WILL_BIND_TIMEOUT
from vcbus.core.scheduling.framework.session import Session
from vcbus.core.scheduling.framework.will_bind import (
    ACTION,
    JOB_DELETED,
    JOB_ENDED,
    NOT_NEEDED,
    STAGE_BOUND,
    WILL_BIND,
    WILL_BIND_DISABLED,
    Held,
    WillBindArgs,
    same_incarnation,
)
from vcbus.core.scheduling.model import JobInfo, TaskInfo, TaskStatus, naive_utc

__all__ = ["is_opted_out", "refresh", "reserve_stages", "will_bind_args"]

_LIVE_PHASES = frozenset({PodGroupPhase.INQUEUE, PodGroupPhase.RUNNING, PodGroupPhase.UNKNOWN})


def will_bind_args(ssn: Session) -> WillBindArgs:
    """The session's will-bind arguments: global ones, overridden by allocate's.

    Raises:
        ValueError: on a malformed argument (``parse_conf`` reports it at start-up).
    """
    return WillBindArgs.parse({**ssn.arguments, **ssn.action_arguments(ACTION)})


def is_opted_out(job: JobInfo) -> bool:
    """Whether the job carries ``vcbus.io/will-bind: "false"``."""
    return job.podgroup.annotations.get(ANNOTATION_WILL_BIND, "").strip().lower() == "false"


def refresh(ssn: Session, args: WillBindArgs) -> None:
    """Release what is no longer due, then reserve for every eligible job (allocate's start).

    Jobs are served highest priority first, then older, then by key.
    """
    ledger = ssn.will_bind
    for key in sorted(ledger.held):
        held = ledger.held[key]
        verdict = _release_all(ssn, args, held)
        if verdict is not None:
            ledger.release(key, list(held.phantoms), *verdict)
            continue
        job = ssn.jobs[key]
        stages = {s.name: s for s in job.podgroup.stages}
        present = set(job.roles())
        unneeded, bound = [], []
        for task, index in sorted(held.phantoms):
            stage = stages.get(task)
            if stage is None or index >= stage.min_available:
                unneeded.append((task, index))
            elif task in present and not job.role_count(task, (TaskStatus.PENDING,)):
                bound.append((task, index))
        if unneeded:
            ledger.release(key, unneeded, NOT_NEEDED, "the job no longer has these pods")
        if bound:
            tasks = ", ".join(sorted({t for t, _ in bound}))
            ledger.release(key, bound, STAGE_BOUND, f"the pods of {tasks} are placed")
    # a dependent job is never settled
    candidates = [
        job
        for job in map(ssn.jobs.__getitem__, ssn.unsettled_jobs())
        if job.dependent and job.podgroup.stages
    ]
    candidates.sort(key=lambda j: (-j.priority, j.creation_key, str(j.key)))
    for job in candidates:
        reserve_stages(ssn, job, args)


def _release_all(ssn: Session, args: WillBindArgs, held: Held) -> tuple[str, str] | None:
    job = ssn.jobs.get(held.job)
    if job is None:
        return JOB_DELETED, f"PodGroup {held.podgroup} was deleted"
    if not same_incarnation(job, held.uid):
        return JOB_DELETED, f"PodGroup {held.podgroup} was recreated"
    if job.phase is PodGroupPhase.COMPLETED:
        return JOB_ENDED, "the job completed"
    if job.ready_task_num() == 0:
        return JOB_ENDED, "no pod of the job is placed any more"
    if not args.enabled:
        return WILL_BIND_DISABLED, f"{WILL_BIND} is off in the scheduler configuration"
    if is_opted_out(job):
        return WILL_BIND_DISABLED, f'the job has {ANNOTATION_WILL_BIND}: "false"'
    if held.expires_at is not None and naive_utc(ssn.now) >= naive_utc(held.expires_at):
        return (
            WILL_BIND_TIMEOUT,
            f"its stages did not bind by {held.expires_at.isoformat()}: the job is re-queued "
            "and its later stages are scheduled like other pods",
        )
    return None


def _is_eligible(ssn: Session, job: JobInfo, args: WillBindArgs) -> bool:
    return (
        args.enabled
        and job.dependent
        and bool(job.podgroup.stages)
        and not is_opted_out(job)
        and job.key not in ssn.will_bind.timed_out
        and job.phase in _LIVE_PHASES
        and job.ready_task_num() > 0
        and ssn.job_ready(job)
    )


def _wanted(job: JobInfo) -> list[tuple[StageTask, int]]:
    """The minimum pods of the job's stages that have no pods yet (those that ask for room)."""
    present = set(job.roles())
    out: list[tuple[StageTask, int]] = []
    for stage in job.podgroup.stages:
        if stage.name in present or not any(v > 0 for v in stage.requests.values()):
            continue
        out.extend((stage, index) for index in range(stage.min_available))
    return out


def reserve_stages(ssn: Session, job: JobInfo, args: WillBindArgs) -> None:
    """Reserve room for the minimum pods of ``job``'s stages that have no pods yet.

    Phantoms are placed in task order (docs/design.md#minimum-pods-first) with ``Session.place``; a
    stage is kept only when all of its missing pods fit on idle resources, otherwise none of them
    is.
    """
    if not _is_eligible(ssn, job, args):
        return
    ledger = ssn.will_bind
    held = ledger.held.get(job.key)
    have = set(held.phantoms) if held is not None else set()
    missing = [
        ledger.phantom(job.key, stage.name, index, stage)
        for stage, index in _wanted(job)
        if (stage.name, index) not in have
    ]
    if not missing:
        return
    by_stage: dict[str, list[TaskInfo]] = {}
    for phantom in ssn.sort_tasks(missing):
        by_stage.setdefault(phantom.role, []).append(phantom)
    kept: list[TaskInfo] = []
    for group in by_stage.values():
        placed: list[TaskInfo] = []
        for phantom in group:
            placement = ssn.place(phantom)
            if placement.node is None or placement.pipelined:
                break
            ledger.place(phantom, placement.node)
            placed.append(phantom)
        if len(placed) == len(group):
            kept.extend(placed)
            continue
        for phantom in reversed(placed):
            ledger.unplace(phantom)
    if kept:
        expires_at = held.expires_at if held is not None and held.expires_at else None
        ledger.hold(job, kept, expires_at or ssn.now + args.timeout)

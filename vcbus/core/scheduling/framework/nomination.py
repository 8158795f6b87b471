"""Nominations: a preemptor's pods keep the capacity their victims release until they bind.

Volcano's preempt and reclaim pipeline the preemptor onto the node whose victims release
(volcano@v1.12.0 ``pkg/scheduler/actions/preempt/preempt.go`` ``stmt.Pipeline``), but a
pipelined task lives one session: the next session another job may take the capacity once
the victims are gone. vcbus keeps the nomination across cycles (no Volcano counterpart,
except the pod's ``status.nominatedNodeName`` that kube-scheduler keeps):

1. When preempt or reclaim commits, the preemptor's pipelined pods and their nodes are
   published (``PodsNominated`` on ``capacity.reservations``) with a bound: the victims'
   longest grace period plus :data:`NOMINATION_MARGIN`.
2. Every session (``nomination_open.open_nominations``), a nomination whose pods still
   wait pipelines them again on their nodes, holding their whole requests
   (``Session.hold_task``): the job is not starving (no second preemption for it), and
   neither the releasing capacity nor the idle part of the node they need goes to another
   task. A pod whose node no longer passes its predicates (locked since for a
   reservation's target, docs/design.md#reservation; cordoned; tainted) is not held there: it waits
   Pending like any other pod.
3. ``allocate`` first (:func:`place_nominated`) places each waiting pod on its node's idle
   capacity once its victims are gone, before any other job; the job's pods bind together
   when its gang is ready. Until then its PodGroup says ``WaitingForEviction`` with the
   victims and the bound.
4. A nomination ends (``NominationEnded``) when its pods bound or none waits any more
   (``Bound``), when its bound passed (``NominationExpired``: the job competes like any
   other again), or when its PodGroup is gone or was recreated (``JobDeleted``).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import timedelta

from vcbus.contracts.events.capacity_reservations import MAX_NOMINATED, NominatedPod
from vcbus.contracts.keys import NodeName, PodKey
from vcbus.contracts.objects.pod import DEFAULT_GRACE_SECONDS
from vcbus.core.reasons import WAITING_FOR_EVICTION
from vcbus.core.scheduling.framework.nomination_open import BOUND, end_nomination
from vcbus.core.scheduling.framework.results import NominationChange, NominationChangeKind
from vcbus.core.scheduling.framework.session import Session
from vcbus.core.scheduling.framework.statement import Op, Operation, Statement
from vcbus.core.scheduling.holds import Nomination
from vcbus.core.scheduling.model import JobInfo, TaskInfo, TaskStatus
from vcbus.core.scheduling.resource import Missing

NOMINATION_MARGIN = timedelta(seconds=60)
"""How long past the victims' longest grace period a nomination waits for its pods."""


def grace_of(task: TaskInfo) -> timedelta:
    """The grace period the cluster gives an evicted pod (its template's, else 30 s)."""
    seconds = task.pod.termination_grace_period_seconds
    return timedelta(seconds=DEFAULT_GRACE_SECONDS if seconds is None else max(seconds, 0))


def place_nominated(ssn: Session) -> None:
    """Give the nominated pods their nodes' idle capacity first; bind a gang that is ready.

    A pod whose node's idle capacity holds it is allocated there; the others stay
    pipelined. A ready job is committed (its pods bind, the nomination ends ``Bound``);
    otherwise what it holds stays held for the session, nothing is bound, and its reason
    is ``WaitingForEviction``.
    """
    for key in sorted(ssn.nominated):
        nomination = ssn.nominated[key]
        job = ssn.jobs[key]
        stmt = Statement(ssn)
        for task in _pipelined(job, nomination):
            node = ssn.nodes.get(task.node_name or "")
            if node is None:
                continue
            ssn.unhold_task(task)
            if task.init_resreq.less_equal(node.idle, Missing.ZERO):
                stmt.allocate(task, node)
            else:
                ssn.hold_task(task, node)
        if ssn.job_ready(job):
            stmt.commit()
            del ssn.nominated[key]
            end_nomination(ssn, nomination, BOUND, "the nominated pods are bound")
            continue
        job.blocked = (WAITING_FOR_EVICTION, waiting_message(nomination))


def waiting_message(nomination: Nomination) -> str:
    """The ``WaitingForEviction`` message: what was evicted, where the pods wait, until when."""
    nodes = sorted({pod.node for pod in nomination.pods})
    victims = ", ".join(nomination.victims[:5]) + (
        f" and {len(nomination.victims) - 5} more" if len(nomination.victims) > 5 else ""
    )
    return (
        f"{len(nomination.pods)} pod(s) nominated on {', '.join(nodes[:5])} wait for "
        f"{victims or 'the released capacity'} to end (grace period); "
        f"nomination held until {nomination.until.isoformat()}"
    )


def nominate(
    ssn: Session,
    job: JobInfo,
    operations: Iterable[Operation],
    reason: str,
    message: str,
) -> None:
    """Record the nomination of a committed preempt/reclaim statement of ``job``."""
    pods: list[NominatedPod] = []
    victims: list[PodKey] = []
    longest = timedelta(0)
    for operation in operations:
        task = operation.task
        if operation.op is Op.PIPELINE and task.job == job.key:
            pods.append(
                NominatedPod(
                    pod=task.key,
                    uid=task.uid,
                    node=NodeName(operation.node),
                    requests={n: int(task.resreq.amount(n)) for n in task.resreq.names()},
                )
            )
        elif operation.op is Op.EVICT:
            victims.append(task.key)
            longest = max(longest, grace_of(task))
    if not pods:
        return
    previous = ssn.snapshot.nominations.get(job.key)
    if previous is not None and previous.uid == job.uid:
        known = {pod.uid for pod in pods}
        pods = [*pods, *(p for p in previous.pods if p.uid not in known)]
        victims = [*previous.victims, *(v for v in victims if v not in previous.victims)]
    change = NominationChange(
        kind=NominationChangeKind.NOMINATED,
        job=job.key,
        podgroup=job.podgroup.name,
        uid=job.uid,
        reason=reason,
        pods=tuple(pods[:MAX_NOMINATED]),
        victims=tuple(victims[:MAX_NOMINATED]),
        until=ssn.now + longest + NOMINATION_MARGIN,
        message=message,
    )
    ssn.nomination_changes.append(change)
    assert change.until is not None
    ssn.nominated[job.key] = Nomination(
        job=job.key,
        podgroup=change.podgroup,
        uid=change.uid,
        pods=change.pods,
        until=change.until,
        victims=change.victims,
        reason=reason,
        message=message,
    )
    job.blocked = (WAITING_FOR_EVICTION, waiting_message(ssn.nominated[job.key]))


def _pipelined(job: JobInfo, nomination: Nomination) -> list[TaskInfo]:
    out = []
    for pod in nomination.pods:
        task = job.tasks.get(pod.uid)
        if task is not None and task.status is TaskStatus.PIPELINED:
            out.append(task)
    return out

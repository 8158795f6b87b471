"""What preempt and reclaim share: candidate nodes, victim order, gang-safe evictions.

Ports of volcano@v1.12.0 ``pkg/scheduler/util/scheduler_helper.go`` (``ValidateVictims``),
``pkg/scheduler/framework/session_plugins.go`` (``BuildVictimsPriorityQueue``) and the node
loop of ``pkg/scheduler/actions/preempt/preempt.go`` (``PredicateForPreemptAction``, then
``PrioritizeNodes``/``SortNodes``).

Deliberate deviations:
- Nodes whose future idle capacity holds the preemptor already are tried first (no victim
  there); then by score, ties to the node name that sorts first (docs/design.md#determinism).
  Volcano tries nodes by score alone and may evict on a node while another has room released
  already.
- Gang, all or nothing: a victim whose eviction leaves its job below its minimum
  (job-level, or a task's minimum, docs/design.md#task-level-gang) takes the rest of its job's
  running pods with it, on every node, in the same statement (:func:`evict_gang_safe`), so no gang
  is left running below its minimum. The ``gang`` plugin lets such a victim through only in that
  case; victims that keep their job at its minimum are ordered first.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cmp_to_key

from vcbus.contracts.objects.pod import ANNOTATION_PREEMPTABLE
from vcbus.core.scheduling.framework.results import EvictNote
from vcbus.core.scheduling.framework.session import Session
from vcbus.core.scheduling.framework.statement import Statement
from vcbus.core.scheduling.model import READY_STATUSES, JobInfo, NodeInfo, TaskInfo, TaskStatus
from vcbus.core.scheduling.resource import Missing, Resource

PREEMPTABLE_STATUSES = frozenset({TaskStatus.BOUND, TaskStatus.RUNNING})
"""Volcano ``PreemptableStatus``: only Bound and Running tasks are victims."""

IN_FLIGHT_STATUSES = frozenset({TaskStatus.ALLOCATED, TaskStatus.BINDING})
"""Tasks placed whose binding is not confirmed yet: they will hold their node, but cannot be
evicted now. A gang with such a task cannot lose all its pods at once (vcbus)."""


def is_preemptable(task: TaskInfo) -> bool:
    """Volcano ``GetPodPreemptable``: the ``volcano.sh/preemptable`` annotation, else label.

    Absent: preemptable. A value that is not a boolean: not preemptable.
    """
    for source in (task.pod.annotations, task.pod.labels):
        value = source.get(ANNOTATION_PREEMPTABLE)
        if value is not None:
            return value.strip().lower() in ("true", "1", "t")
    return True


def is_starving(ssn: Session, job: JobInfo) -> bool:
    """``JobStarving``, or a task below its minimum counting pipelined pods.

    Gang's ``JobStarving`` ignores task minimums (B3.3); vcbus enforces them, so a job
    whose job-level minimum is met but a task's is not still takes capacity back.
    """
    return ssn.job_starving(job) or (not job.is_pending() and job.check_task_starving())


def candidate_nodes(ssn: Session, task: TaskInfo) -> list[NodeInfo]:
    """Nodes passing the predicates (not resource fit) for ``task``, best first.

    Nodes whose future idle capacity holds ``task`` already (no victim needed) come first;
    then by score, ties to the smaller name.
    """
    scored = []
    for node in ssn.node_list:
        if ssn.predicate_fn(task, node) is not None:
            continue
        scored.append((not fits_future(task, node), -ssn.node_order_fn(task, node), node.name))
    scored.sort()
    return [ssn.nodes[name] for _, _, name in scored]


def validate_victims(task: TaskInfo, node: NodeInfo, victims: Sequence[TaskInfo]) -> bool:
    """``ValidateVictims``: some victims, and what they free plus future idle holds ``task``."""
    if not victims:
        return False
    freed = node.future_idle()
    for victim in victims:
        freed = freed + victim.resreq
    return task.init_resreq.less_equal(freed, Missing.ZERO)


def keeps_gang(job: JobInfo, task: TaskInfo, gone: int = 0, gone_role: int = 0) -> bool:
    """Whether ``job`` stays at its minimum (job and ``task``'s role) without one more pod."""
    if job.ready_task_num() - gone - 1 < job.gang_min and job.gang_min > 1:
        return False
    minimum = job.task_min_available.get(task.role, 0)
    if minimum <= 0:
        return True
    return job.role_count(task.role, READY_STATUSES) - gone_role - 1 >= minimum


def order_victims(ssn: Session, victims: Sequence[TaskInfo]) -> list[TaskInfo]:
    """``BuildVictimsPriorityQueue``: the lowest-ordered job's last task first.

    Victims that keep their job at its minimum come before victims that would take the
    whole gang (vcbus).
    """

    def compare(left: TaskInfo, right: TaskInfo) -> int:
        left_job, right_job = ssn.jobs[left.job], ssn.jobs[right.job]
        left_keeps, right_keeps = keeps_gang(left_job, left), keeps_gang(right_job, right)
        if left_keeps != right_keeps:
            return -1 if left_keeps else 1
        if left.job == right.job:
            return -ssn.task_compare_fns(left, right) or (-1 if left.key > right.key else 1)
        if left_job.queue != right_job.queue:
            lq, rq = ssn.queues.get(left_job.queue), ssn.queues.get(right_job.queue)
            if lq is not None and rq is not None:
                return 1 if ssn.queue_order_fn(lq, rq) else -1
        by_job = ssn.job_compare(left_job, right_job)
        if by_job:
            return 1 if by_job < 0 else -1
        return -1 if left.key > right.key else 1

    return sorted(victims, key=cmp_to_key(compare))


def evict_gang_safe(
    ssn: Session,
    stmt: Statement,
    victim: TaskInfo,
    *,
    reason: str,
    note: EvictNote,
    allowed: Callable[[list[TaskInfo]], bool],
) -> Resource:
    """Evict ``victim``; if its job falls below its minimum, evict the rest of the job too.

    A job that would fall below its minimum while one of its pods is still being bound is
    left alone: that pod could not be evicted with the others.

    Args:
        ssn: the session.
        stmt: the preemptor's statement (the evictions commit or discard with it).
        victim: a Bound or Running task.
        reason: ``Preempted`` or ``Reclaimed``.
        note: for whom.
        allowed: whether the other plugins let the rest of the job go too (victim filters);
            when they do not, nothing is evicted.

    Returns:
        What was freed on ``victim``'s node (empty when nothing was evicted).
    """
    job = ssn.jobs[victim.job]
    rest: list[TaskInfo] = []
    if not keeps_gang(job, victim):
        if job.count(*IN_FLIGHT_STATUSES):
            return Resource()  # its in-flight pods would be left behind, below the minimum
        rest = sorted(
            (
                t
                for t in job.tasks.values()
                if t.uid != victim.uid and t.status in PREEMPTABLE_STATUSES
            ),
            key=lambda t: t.key,
        )
        if rest and (not all(is_preemptable(t) for t in rest) or not allowed(rest)):
            return Resource()
    freed = Resource(dict(victim.resreq.as_dict()))
    stmt.evict(victim, reason, note)
    for task in rest:
        stmt.evict(task, reason, note)
        if task.node_name == victim.node_name:
            freed = freed + task.resreq
    return freed


def fits_future(task: TaskInfo, node: NodeInfo) -> bool:
    """Whether ``task`` fits ``node``'s future idle resources."""
    return task.init_resreq.less_equal(node.future_idle(), Missing.ZERO)


def take_back_room(ssn: Session, job: JobInfo) -> Resource:
    """What ``job`` could get by preempt and reclaim now: the enqueue side's estimate.

    The cluster's idle capacity, plus the requests of the running, preemptable pods of
    lower-priority jobs of its queue, plus what proportion says its queue may reclaim.
    """
    room = Resource()
    for node in ssn.node_list:
        room = room + node.idle
    for other in ssn.jobs.values():
        if other.queue != job.queue or other.priority >= job.priority:
            continue
        for task in other.tasks.values():
            if task.status in PREEMPTABLE_STATUSES and is_preemptable(task):
                room = room + task.resreq
    return room + ssn.reclaim_room(job)

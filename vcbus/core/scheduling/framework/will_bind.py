"""Will-bind: capacity held for the later stages of dependsOn jobs, so they bind at once.

docs/design.md#dependent-jobs gang-schedules a dependent job stage by stage. The seed design left
one problem open, and Volcano has it too (Volcano's pkg/scheduler/: its scheduler knows nothing of
``dependsOn``): after the first stage runs, a later stage can find the cluster full, and the job
hangs half-started. vcbus closes it with *will-bind reservations*, decided by the allocator (no
Volcano counterpart):

1. When allocate commits a dependent job whose present stages are ready (its first stage),
   it places the minimum pods of every stage that has no pods yet (``PodGroup.stages``) with
   the predicates and scores of real pods, minimum pods first in task order
   (docs/design.md#minimum-pods-first), and holds them as *phantom* tasks: their requests sit on
   their nodes, counted as used by every later placement of the session and, through the
   ``capacity.reservations`` topic, by podgroup-enqueue (overcommit) and by a restarted or standby
   allocator. A stage is reserved whole or not at all (its minimum is a gang); a stage that does not
   fit is tried again each cycle, before other jobs are allocated.
2. When a stage's real pods exist (the job-controller creates them once their dependencies
   are ready), each pod takes its phantom as it is placed: the phantom's capacity is given
   back and the pod goes to the reserved node when it fits there (else where the usual choice
   puts it). When the job's statement commits, the taken phantoms are released
   (``StageBound``); when it is discarded, they are held again.
3. A reservation is also released when its job completes or has no pod placed any more
   (``JobEnded``), when its PodGroup is deleted or recreated (``JobDeleted``), when the
   feature is switched off (``WillBindDisabled``), when the job no longer has a held pod
   (``NotNeeded``: its stage or minimum shrank), when the stage's pods are found placed
   without it (``StageBound``: none of them pending any more), and
   ``will-bind-timeout`` after it was first made (``WillBindTimeout``). After a timeout the
   job is re-queued: its later stages are scheduled like any other pods, in queue and job
   order, with no reservation, and its PodGroup says why (allocator condition ``WillBind``
   with reason ``WillBindTimeout``, ranked as a pending reason on ``podgroups.status``). No
   new reservation is made for that PodGroup incarnation.

Arguments, read from allocate's ``configurations`` entry (or global arguments):

- ``will-bind``: ``true`` (default) or ``false``;
- ``will-bind-timeout``: a duration (``90s``, ``10m``; default ``10m``), more than zero.

A job opts out with the annotation ``vcbus.io/will-bind: "false"``.

This module holds the arguments, the session's ledger of phantoms and the conditions close
reports; what allocate does (release what is no longer due, reserve stages) is
``framework.will_bind_allocate``.

Accounting: a phantom lives in the session's ``NodeMatrix`` (used, idle, pod count) and in
this ledger, never in ``JobInfo.tasks`` or ``NodeInfo.tasks``, so job counters and gang checks
see only real pods. A real pod takes its phantom out of the matrix before it is placed, so
the two are never counted together. Queue shares (proportion, drf) do not count phantoms.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Protocol, cast

from vcbus.contracts import reasons as codes
from vcbus.contracts.events.capacity_reservations import ReservedPod
from vcbus.contracts.keys import JobKey, NodeName, pod_key, split_key
from vcbus.contracts.objects.meta import Condition
from vcbus.contracts.objects.pod import Pod
from vcbus.contracts.objects.podgroup import PodGroupPhase, StageTask
from vcbus.core.reasons import WILL_BIND_TIMEOUT
from vcbus.core.scheduling.framework.arguments import get_duration
from vcbus.core.scheduling.framework.conf import Arguments
from vcbus.core.scheduling.framework.results import WillBindChange, WillBindChangeKind
from vcbus.core.scheduling.holds import WillBind
from vcbus.core.scheduling.model import JobInfo, NodeInfo, TaskInfo, TaskStatus
from vcbus.core.scheduling.node_matrix import NodeMatrix
from vcbus.core.scheduling.resource import Resource

ACTION = "allocate"
"""The action whose ``configurations`` entry carries the arguments."""
WILL_BIND = "will-bind"
WILL_BIND_TIMEOUT_ARGUMENT = "will-bind-timeout"
DEFAULT_WILL_BIND_TIMEOUT = timedelta(minutes=10)

CONDITION_TYPE = codes.WILL_BIND_CONDITION
CAPACITY_RESERVED = codes.CAPACITY_RESERVED
STAGE_BOUND = codes.STAGE_BOUND
JOB_ENDED = codes.JOB_ENDED
JOB_DELETED = codes.JOB_DELETED
WILL_BIND_DISABLED = codes.WILL_BIND_DISABLED
NOT_NEEDED = codes.WILL_BIND_NOT_NEEDED

__all__ = [
    "CAPACITY_RESERVED",
    "CONDITION_TYPE",
    "DEFAULT_WILL_BIND_TIMEOUT",
    "JOB_DELETED",
    "JOB_ENDED",
    "NOT_NEEDED",
    "STAGE_BOUND",
    "WILL_BIND",
    "WILL_BIND_DISABLED",
    "WILL_BIND_TIMEOUT_ARGUMENT",
    "Held",
    "WillBindArgs",
    "WillBindLedger",
    "WillBindSession",
    "same_incarnation",
    "set_conditions",
]

PhantomKey = tuple[str, int]
"""(task, index) of the pod a phantom stands for."""


@dataclass(frozen=True, slots=True)
class WillBindArgs:
    """The will-bind arguments, checked.

    Attributes:
        enabled: whether reservations are made (existing ones are released when not).
        timeout: how long a reservation may wait for its stages to bind.
    """

    enabled: bool = True
    timeout: timedelta = DEFAULT_WILL_BIND_TIMEOUT

    @classmethod
    def parse(cls, arguments: Arguments) -> WillBindArgs:
        """Read and check the arguments.

        Raises:
            ValueError: when ``will-bind`` is not a boolean or the timeout not a positive
                duration.
        """
        raw = arguments.get(WILL_BIND, True)
        if isinstance(raw, str) and raw.strip().lower() in ("true", "false"):
            raw = raw.strip().lower() == "true"
        if not isinstance(raw, bool):
            raise ValueError(f"{WILL_BIND} must be true or false, got {raw!r}")
        timeout = get_duration(arguments, WILL_BIND_TIMEOUT_ARGUMENT, DEFAULT_WILL_BIND_TIMEOUT)
        if timeout is None or timeout <= timedelta(0):
            raise ValueError(f"{WILL_BIND_TIMEOUT_ARGUMENT} must be more than zero")
        return cls(enabled=raw, timeout=timeout)


class WillBindSession(Protocol):
    """What the ledger and the close-time conditions read in a session (``Session`` has it)."""

    @property
    def jobs(self) -> Mapping[JobKey, JobInfo]:
        """The session's jobs."""
        ...

    @property
    def nodes(self) -> Mapping[str, NodeInfo]:
        """The session's nodes by name."""
        ...

    @property
    def matrix(self) -> NodeMatrix:
        """The session's node accounting, where phantoms are counted."""
        ...

    @property
    def job_conditions(self) -> MutableMapping[JobKey, tuple[Condition, ...]]:
        """Allocator conditions set this session (``set_conditions`` adds ``WillBind``)."""
        ...

    @property
    def will_bind(self) -> WillBindLedger:
        """The session's ledger."""
        ...

    def unsettled_jobs(self) -> list[JobKey]:
        """Every job but the settled ones (``job_updater.settled``), by job key."""
        ...


def same_incarnation(job: JobInfo, uid: str) -> bool:
    """Whether ``job`` is the PodGroup incarnation ``uid`` names (either uid unknown: yes)."""
    return not uid or not job.podgroup.uid or job.podgroup.uid == uid


@dataclass(slots=True, eq=False)
class Held:
    """What is reserved for one job in this session.

    Attributes:
        job: the job.
        podgroup: its PodGroup's name.
        uid: its PodGroup's uid.
        expires_at: when the reservation times out.
        live: whether its PodGroup (same uid, not Completed) is in the session; only then
            are its phantoms counted on their nodes.
        phantoms: (task, index) → the phantom task; ``node_name`` is its reserved node.
        taken: phantoms taken by their real pod in this session (off the matrix).
        accounted: phantoms whose requests are on their node in the matrix.
    """

    job: JobKey
    podgroup: str
    uid: str
    expires_at: datetime | None
    live: bool
    phantoms: dict[PhantomKey, TaskInfo] = field(default_factory=dict)
    taken: set[PhantomKey] = field(default_factory=set)
    accounted: set[PhantomKey] = field(default_factory=set)

    def pods(self, keys: Iterable[PhantomKey] | None = None) -> tuple[ReservedPod, ...]:
        """The held pods (or those of ``keys``) as contract values, by task and index."""
        chosen = sorted(self.phantoms if keys is None else keys)
        return tuple(_reserved_pod(self.phantoms[key]) for key in chosen)


def _reserved_pod(phantom: TaskInfo) -> ReservedPod:
    return ReservedPod(
        task=phantom.role,
        index=phantom.index,
        node=NodeName(phantom.node_name or ""),
        requests=dict(sorted(phantom.pod.requests.items())),
    )


class WillBindLedger:
    """The session's will-bind reservations: phantoms on nodes, and what changed."""

    def __init__(self, ssn: WillBindSession, states: Mapping[JobKey, WillBind]) -> None:
        """Load the snapshot's reservations and count the live ones on their nodes.

        The ledger refers to its session weakly: the session holds the ledger, and a
        closed session is freed as soon as it is dropped (``Session.release``).
        """
        self._ssn: WillBindSession = cast("WillBindSession", weakref.proxy(ssn))
        self.held: dict[JobKey, Held] = {}
        self.timed_out: set[JobKey] = set()
        """Jobs whose reservation timed out (this PodGroup gets no new one)."""
        self.changes: list[WillBindChange] = []
        for key in sorted(states):
            self._load(states[key])

    def _load(self, state: WillBind) -> None:
        job = self._ssn.jobs.get(state.job)
        same = job is not None and same_incarnation(job, state.uid)
        if state.timed_out and same:
            self.timed_out.add(state.job)
        if not state.pods:
            return
        live = same and job is not None and job.phase is not PodGroupPhase.COMPLETED
        held = Held(
            job=state.job,
            podgroup=state.podgroup,
            uid=state.uid,
            expires_at=state.expires_at,
            live=live,
        )
        self.held[state.job] = held
        stages = {s.name: s for s in job.podgroup.stages} if job is not None else {}
        for pod in state.pods:
            phantom = self.phantom(state.job, pod.task, pod.index, stages.get(pod.task), pod)
            phantom.node_name = pod.node
            key = (pod.task, pod.index)
            held.phantoms[key] = phantom
            if live:
                self._account(held, key)

    # Phantoms ------------------------------------------------------------------------------
    def phantom(
        self,
        job_key: JobKey,
        task: str,
        index: int,
        stage: StageTask | None,
        reserved: ReservedPod | None = None,
    ) -> TaskInfo:
        """Return a phantom task: the pod ``<job>-<task>-<index>`` as it will be created.

        Args:
            job_key: the job.
            task: the task (stage) name.
            index: the pod's index.
            stage: the stage's template from the PodGroup, if it still has one.
            reserved: the held pod, whose requests win over the stage's.
        """
        namespace, name = split_key(job_key)
        job = self._ssn.jobs.get(job_key)
        requests = dict(reserved.requests) if reserved is not None else {}
        if reserved is None and stage is not None:
            requests = dict(stage.requests)
        pod = Pod(
            name=f"{name}-{task}-{index}",
            namespace=namespace,
            job=job_key,
            task=task,
            index=index,
            podgroup=job.name if job is not None else "",
            uid=f"will-bind/{job.uid if job is not None else job_key}/{task}/{index}",
            queue=job.queue if job is not None else "",
            requests=dict(sorted(requests.items())),
            priority=stage.priority if stage is not None else 1,
            node_selector=dict(stage.node_selector) if stage is not None else {},
            tolerations=stage.tolerations if stage is not None else (),
        )
        resreq = Resource({k: float(v) for k, v in pod.requests.items()})
        return TaskInfo(
            uid=pod.uid,
            key=pod_key(namespace, pod.name),
            name=pod.name,
            namespace=namespace,
            job=job_key,
            role=task,
            index=index,
            priority=pod.priority,
            resreq=resreq,
            status=TaskStatus.ALLOCATED,
            node_name=None,
            pod=pod,
            creation=job.creation if job is not None else None,
            vector=self._ssn.matrix.vector(resreq),
        )

    def _node(self, phantom: TaskInfo) -> NodeInfo | None:
        return self._ssn.nodes.get(phantom.node_name or "")

    def _account(self, held: Held, key: PhantomKey) -> None:
        phantom = held.phantoms[key]
        node = self._node(phantom)
        if node is None or key in held.accounted or phantom.vector is None:
            return
        self._ssn.matrix.add(node.row, phantom.vector, releasing=False, pipelined=False)
        held.accounted.add(key)

    def _unaccount(self, held: Held, key: PhantomKey) -> None:
        phantom = held.phantoms[key]
        node = self._node(phantom)
        if node is None or key not in held.accounted or phantom.vector is None:
            return
        self._ssn.matrix.remove(node.row, phantom.vector, releasing=False, pipelined=False)
        held.accounted.discard(key)

    # Queries -------------------------------------------------------------------------------
    def reserved(self, job: JobKey) -> Resource:
        """The requests held for ``job`` on nodes now (zero when none)."""
        held = self.held.get(job)
        total = Resource()
        if held is None:
            return total
        for key in sorted(held.accounted):
            total = total + held.phantoms[key].resreq
        return total

    # Changes -------------------------------------------------------------------------------
    def take(self, task: TaskInfo) -> TaskInfo | None:
        """Let a real pod take its phantom: the one of its task and index, else its task's.

        The phantom leaves its node's accounting (it stays held until ``consume``).

        Returns:
            The phantom (its ``node_name`` is the reserved node), or ``None``.
        """
        held = self.held.get(task.job)
        if held is None or not held.live:
            return None
        key = (task.role, task.index)
        if key not in held.phantoms or key in held.taken:
            free = sorted(k for k in held.phantoms if k[0] == task.role and k not in held.taken)
            if not free:
                return None
            key = free[0]
        held.taken.add(key)
        self._unaccount(held, key)
        return held.phantoms[key]

    def restore(self, phantom: TaskInfo) -> None:
        """Undo ``take``: the phantom is counted on its node again."""
        held = self.held.get(phantom.job)
        key = (phantom.role, phantom.index)
        if held is None or key not in held.phantoms:
            return
        held.taken.discard(key)
        self._account(held, key)

    def consume(self, phantoms: Sequence[TaskInfo]) -> None:
        """Release taken phantoms whose real pods were committed (``StageBound``)."""
        by_job: dict[JobKey, list[PhantomKey]] = {}
        for phantom in phantoms:
            by_job.setdefault(phantom.job, []).append((phantom.role, phantom.index))
        for job in sorted(by_job):
            keys = by_job[job]
            tasks = ", ".join(sorted({k[0] for k in keys}))
            self.release(job, keys, STAGE_BOUND, f"the pods of {tasks} were bound")

    def release(self, job: JobKey, keys: Iterable[PhantomKey], reason: str, message: str) -> None:
        """Give back the capacity held for ``keys`` of ``job`` and record why."""
        held = self.held.get(job)
        if held is None:
            return
        chosen = sorted(k for k in set(keys) if k in held.phantoms)
        if not chosen:
            return
        pods = held.pods(chosen)
        for key in chosen:
            self._unaccount(held, key)
            held.taken.discard(key)
            del held.phantoms[key]
        if reason == WILL_BIND_TIMEOUT:
            self.timed_out.add(job)
        self._record(WillBindChangeKind.RELEASED, held, pods, reason, message)
        if not held.phantoms:
            del self.held[job]

    def hold(self, job: JobInfo, phantoms: Sequence[TaskInfo], expires_at: datetime) -> None:
        """Keep placed phantoms (already on their nodes' accounting) as ``job``'s reservation."""
        held = self.held.get(job.key)
        if held is not None and held.expires_at is None:
            held.expires_at = expires_at
        if held is None:
            held = Held(
                job=job.key,
                podgroup=job.name,
                uid=job.podgroup.uid,
                expires_at=expires_at,
                live=True,
            )
            self.held[job.key] = held
        keys = []
        for phantom in phantoms:
            key = (phantom.role, phantom.index)
            held.phantoms[key] = phantom
            held.accounted.add(key)
            keys.append(key)
        pods = held.pods(keys)
        where = ", ".join(f"{p.task}-{p.index} on {p.node}" for p in pods)
        self._record(
            WillBindChangeKind.RESERVED,
            held,
            pods,
            CAPACITY_RESERVED,
            f"reserved for stages that wait for their dependencies: {where}",
        )

    def place(self, phantom: TaskInfo, node: NodeInfo) -> None:
        """Count a new phantom on ``node`` (before ``hold`` keeps it)."""
        phantom.node_name = node.name
        if phantom.vector is not None:
            self._ssn.matrix.add(node.row, phantom.vector, releasing=False, pipelined=False)

    def unplace(self, phantom: TaskInfo) -> None:
        """Undo ``place`` for a phantom that is not kept."""
        node = self._node(phantom)
        if node is not None and phantom.vector is not None:
            self._ssn.matrix.remove(node.row, phantom.vector, releasing=False, pipelined=False)
        phantom.node_name = None

    def _record(
        self,
        kind: WillBindChangeKind,
        held: Held,
        pods: tuple[ReservedPod, ...],
        reason: str,
        message: str,
    ) -> None:
        self.changes.append(
            WillBindChange(
                kind=kind,
                job=held.job,
                podgroup=held.podgroup,
                uid=held.uid,
                pods=pods,
                held=held.pods(),
                expires_at=held.expires_at,
                reason=reason,
                message=message,
            )
        )


# What close reports ---------------------------------------------------------------------------
def _has_waiting_stages(job: JobInfo) -> bool:
    present = set(job.roles())
    return any(
        stage.name not in present or job.role_count(stage.name, (TaskStatus.PENDING,)) > 0
        for stage in job.podgroup.stages
    )


def _condition(ssn: WillBindSession, job: JobInfo) -> Condition | None:
    ledger = ssn.will_bind
    held = ledger.held.get(job.key)
    if held is not None and held.live and held.phantoms:
        pods = held.pods()
        where = ", ".join(f"{p.task}-{p.index} on {p.node}" for p in pods)
        until = f" until {held.expires_at.isoformat()}" if held.expires_at else ""
        return Condition(
            type=CONDITION_TYPE,
            status="True",
            reason=CAPACITY_RESERVED,
            message=f"{len(pods)} pod(s) of later stages reserved{until}: {where}",
        )
    if job.key in ledger.timed_out and _has_waiting_stages(job):
        return Condition(
            type=CONDITION_TYPE,
            status="False",
            reason=WILL_BIND_TIMEOUT,
            message=(
                "the reservation for the later stages timed out: the job is re-queued and "
                "they are scheduled like other pods"
            ),
        )
    return None


def set_conditions(ssn: WillBindSession) -> None:
    """Give each job its ``WillBind`` condition (or none), beside the other conditions.

    A settled job (``job_updater.settled``) has neither a ``WillBind`` condition nor a
    ledger entry: it is left as it is.
    """
    for key in ssn.unsettled_jobs():
        job = ssn.jobs[key]
        current = ssn.job_conditions.get(key, job.conditions)
        wanted = _condition(ssn, job)
        others = tuple(c for c in current if c.type != CONDITION_TYPE)
        result = (*others, wanted) if wanted is not None else others
        if result != current:
            ssn.job_conditions[key] = result

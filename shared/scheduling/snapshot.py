"""The scheduler's view of the cluster, folded from the state topics, and its frozen snapshots.

Volcano's ``SchedulerCache`` (volcano@v1.12.0 ``pkg/scheduler/cache/cache.go``,
``event_handlers.go``) follows the API server; vcbus's ``ClusterView`` follows the topics
``podgroups``, ``podgroups.status``, ``podgroups.conditions``, ``pods``, ``pods.status``,
``bindings``, ``nodes``, ``queues`` and ``reservations``. Every ``apply`` is idempotent and
tolerates events of different topics arriving in any order. ``snapshot()`` returns a frozen
``ClusterSnapshot`` for one scheduling cycle.

Deliberate deviations:
- A binding the allocator just made is *assumed* (``assume``): the pod counts as Binding on
  its node until ``pods.status`` confirms it, as Volcano's cache does after ``Bind``.
- A refused binding (``BindingRefused``) puts the pod back to Pending and raises its
  ``attempt``; bindings of older attempts that arrive late are ignored.
- An eviction the allocator requested (``PodEvictionRequested`` on ``bindings``) makes the pod
  *releasing* (Volcano's ``Releasing``: a pod with a deletion timestamp) until the cluster
  reports it ended: its resources count as future idle, never as idle.
- A deleted pod (``PodDeleted``) leaves the view at once: the cluster refuses any binding that
  would overcommit a node whose pod is still stopping, so no capacity is double-booked.
- The reservation state (target job, locked nodes, SPEC A6) is part of the snapshot, fed from
  the ``reservations`` topic, instead of Volcano's process-wide ``util.Reservation``. Its
  ``generation`` grows with each election; events of an older generation are dropped, so
  events of two target jobs read out of order (the topic is keyed by job) cannot mix.
- Volcano's ``ScheduleStartTimestamp`` (stamped by enqueue the first time it sees a job) is
  ``PodGroupState.first_seen``: the ``occurred_at`` of the first ``podgroups`` event of that
  PodGroup uid, so it is the same after a restart that replays the topic.
- A ``PodGroupPhaseChanged`` that names a PodGroup uid other than the current one (a late
  change of a deleted PodGroup) does not set the phase of its successor.
- Will-bind reservations (``capacity.reservations``, vcbus) are part of the snapshot
  (``will_bind``): the newest event of a job replaces its entry (events carry everything
  held). An entry outlives its PodGroup until the allocator publishes its release; sessions
  account only entries whose PodGroup (same uid) still exists.
- For the session cache (``framework.session_cache``), a view's snapshots keep the objects of
  what did not change: a ``PodGroupState`` is the same object from one snapshot to the next
  until something of its PodGroup changes, a ``PodState`` until its pod changes, and
  ``pods_by_job`` gives each job's pods (by pod key) as one tuple, the same tuple until one
  of them changes. Every change makes new objects.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from types import MappingProxyType
from typing import TypeVar, assert_never

import msgspec

from contracts.events.bindings import BindingCreated, PodEvictionRequested
from contracts.events.capacity_reservations import (
    CapacityReleased,
    CapacityReserved,
    LocksHonoured,
    LocksLifted,
    NominatedPod,
    NominationEnded,
    PodsNominated,
    ReservedPod,
)
from contracts.events.nodes import NodeChanged, NodeRegistered, NodeRemoved
from contracts.events.podgroups import PodGroupCreated, PodGroupDeleted, PodGroupUpdated
from contracts.events.podgroups_conditions import PodGroupConditionsChanged
from contracts.events.podgroups_status import PodGroupPhaseChanged
from contracts.events.pods import PodCreated, PodDeleted
from contracts.events.pods_status import BindingRefused, PodPhaseChanged
from contracts.events.queues import QueueDeclared, QueueDeleted
from contracts.events.reservations import NodesLocked, NodesUnlocked, TargetJobElected
from contracts.keys import JobKey, NodeName, PodKey, job_key, pod_key
from contracts.manifests import ManifestError, read_node, read_queue
from contracts.objects.meta import Condition
from contracts.objects.node import Node
from contracts.objects.pod import Pod, PodPhase, Toleration
from contracts.objects.podgroup import PodGroup, PodGroupPhase, StageTask
from contracts.objects.queue import DEFAULT_QUEUE, Queue
from contracts.quantity import parse_resources
from shared.reasons import WILL_BIND_TIMEOUT
from shared.scheduling.model import naive_utc

ClusterEvent = (
    PodGroupCreated
    | PodGroupUpdated
    | PodGroupDeleted
    | PodGroupPhaseChanged
    | PodGroupConditionsChanged
    | PodCreated
    | PodDeleted
    | PodPhaseChanged
    | BindingRefused
    | BindingCreated
    | PodEvictionRequested
    | NodeRegistered
    | NodeChanged
    | NodeRemoved
    | QueueDeclared
    | QueueDeleted
    | TargetJobElected
    | NodesLocked
    | NodesUnlocked
    | CapacityReserved
    | CapacityReleased
    | LocksHonoured
    | LocksLifted
    | PodsNominated
    | NominationEnded
)
"""Every event a ``ClusterView`` folds."""

T = TypeVar("T")

_LIVE = frozenset({PodPhase.PENDING, PodPhase.RUNNING})


@dataclass(frozen=True, slots=True)
class PodState:
    """A pod and where it is: phase, node, and whether its binding is still unconfirmed."""

    pod: Pod
    phase: PodPhase = PodPhase.PENDING
    node: str | None = None
    binding: bool = False
    attempt: int = 0
    """How many bindings of this pod the cluster refused (the next binding's attempt)."""
    releasing: bool = False
    """An eviction was requested and the pod still runs out its grace period."""


@dataclass(frozen=True, slots=True)
class PodGroupState:
    """A PodGroup with its phase (``podgroups.status``) and the allocator's conditions."""

    podgroup: PodGroup
    phase: PodGroupPhase = PodGroupPhase.PENDING
    conditions: tuple[Condition, ...] = ()
    """Conditions last published on ``podgroups.conditions``."""
    status_conditions: tuple[Condition, ...] = ()
    """Conditions last published on ``podgroups.status``."""
    first_seen: datetime | None = None
    """When the scheduler first saw this PodGroup (Volcano ``ScheduleStartTimestamp``)."""


@dataclass(frozen=True, slots=True)
class Reservation:
    """The reservation state (SPEC A6): the target job and the nodes locked for it.

    Attributes:
        target_job: the elected job, or ``None``.
        locked_nodes: nodes that take no new pod of another job.
        elected_at: when the target was elected (the lock timeout counts from it).
        generation: the number of the latest election (kept after the target is cleared).
        locked_at: when nodes were last locked (the lock interval counts from it).
        backoff: (job, until): jobs whose reservation expired, not electable until then
            (sorted by job; at most ``MAX_BACKOFF_ENTRIES``, ended ones dropped).
    """

    target_job: JobKey | None = None
    locked_nodes: frozenset[str] = frozenset()
    elected_at: datetime | None = None
    generation: int = 0
    locked_at: datetime | None = None
    backoff: tuple[tuple[JobKey, datetime], ...] = ()


MAX_BACKOFF_ENTRIES = 1000
"""The most jobs in backoff a reservation remembers (SPEC A12); the oldest ends go first."""


def with_backoff(
    entries: tuple[tuple[JobKey, datetime], ...],
    job: JobKey,
    until: datetime | None,
    now: datetime,
) -> tuple[tuple[JobKey, datetime], ...]:
    """The backoff list with ``job`` added until ``until``, ended entries dropped (bounded)."""
    kept = {k: u for k, u in entries if naive_utc(u) > naive_utc(now)}
    if until is not None:
        kept[job] = until
    newest = sorted(kept.items(), key=lambda item: (naive_utc(item[1]), item[0]))
    return tuple(sorted(newest[-MAX_BACKOFF_ENTRIES:]))


@dataclass(frozen=True, slots=True)
class WillBind:
    """A dependent job's will-bind reservation: capacity held for its later stages.

    Attributes:
        job: the job.
        podgroup: the PodGroup's name.
        uid: the PodGroup's uid (the reservation belongs to that incarnation).
        pods: the pods held, as capacity on nodes.
        reserved_at: when the first of them was reserved.
        expires_at: when the reservation times out, if its stages have not bound.
        timed_out: the reservation timed out; no new one is made for this PodGroup.
    """

    job: JobKey
    podgroup: str
    uid: str
    pods: tuple[ReservedPod, ...] = ()
    reserved_at: datetime | None = None
    expires_at: datetime | None = None
    timed_out: bool = False


@dataclass(frozen=True, slots=True)
class Nomination:
    """A preemptor's pods waiting on nodes whose capacity preempt or reclaim freed.

    Attributes:
        job: the preemptor.
        podgroup: its PodGroup's name.
        uid: its PodGroup's uid (the nomination belongs to that incarnation).
        pods: each waiting pod and its node.
        victims: the pods evicted for it.
        until: when the nomination ends if the pods have not bound.
        reason: ``Preempted`` or ``Reclaimed``.
        message: what was taken from whom, in words.
    """

    job: JobKey
    podgroup: str
    uid: str
    pods: tuple[NominatedPod, ...]
    until: datetime
    victims: tuple[PodKey, ...] = ()
    reason: str = ""
    message: str = ""


JobPods = tuple[tuple[PodKey, PodState], ...]
"""A job's pods as ``(pod key, state)`` pairs, by pod key."""


@dataclass(frozen=True, slots=True)
class PodsByJob:
    """The pods of a snapshot grouped by job: a reading aid, not more state.

    Attributes:
        pods: the mapping the groups were made from (a snapshot uses the groups only when
            this is its own ``pods``, so a snapshot copied with other pods cannot use
            groups that do not match them).
        groups: job → its pods as ``(pod key, state)``, by pod key. A ``ClusterView`` hands
            out the same tuple for a job until one of its pods changes.
    """

    pods: Mapping[PodKey, PodState]
    groups: Mapping[JobKey, JobPods]


@dataclass(frozen=True, slots=True)
class ClusterSnapshot:
    """Everything one scheduling cycle reads, frozen."""

    nodes: Mapping[str, Node] = field(default_factory=lambda: MappingProxyType({}))
    queues: Mapping[str, Queue] = field(default_factory=lambda: MappingProxyType({}))
    podgroups: Mapping[JobKey, PodGroupState] = field(default_factory=lambda: MappingProxyType({}))
    pods: Mapping[PodKey, PodState] = field(default_factory=lambda: MappingProxyType({}))
    reservation: Reservation = Reservation()
    will_bind: Mapping[JobKey, WillBind] = field(default_factory=lambda: MappingProxyType({}))
    nominations: Mapping[JobKey, Nomination] = field(default_factory=lambda: MappingProxyType({}))
    """Preemptors' pods waiting for the capacity their victims release (preempt, reclaim)."""
    pods_by_job: PodsByJob | None = field(default=None, compare=False, repr=False)
    """``pods`` grouped by job, when the snapshot comes from a ``ClusterView``."""

    def job_pods(self) -> Mapping[JobKey, JobPods]:
        """Each job's pods as ``(pod key, state)`` by pod key (jobs with pods only).

        The view's groups when they belong to this snapshot's ``pods``; otherwise made here
        (sorted once by pod key).
        """
        grouped = self.pods_by_job
        if grouped is not None and grouped.pods is self.pods:
            return grouped.groups
        return group_pods(self.pods)

    @classmethod
    def build(
        cls,
        *,
        nodes: Iterable[Node] = (),
        queues: Iterable[Queue] = (),
        podgroups: Iterable[PodGroupState] = (),
        pods: Iterable[PodState] = (),
        reservation: Reservation | None = None,
        will_bind: Iterable[WillBind] = (),
        nominations: Iterable[Nomination] = (),
    ) -> ClusterSnapshot:
        """Build a snapshot from lists (tests, scenarios)."""
        by_key = MappingProxyType({pod_key(p.pod.namespace, p.pod.name): p for p in pods})
        return cls(
            nodes=MappingProxyType({n.name: n for n in nodes}),
            queues=MappingProxyType({q.name: q for q in queues}),
            podgroups=MappingProxyType({pg.podgroup.job: pg for pg in podgroups}),
            pods=by_key,
            reservation=reservation or Reservation(),
            will_bind=MappingProxyType({w.job: w for w in will_bind}),
            nominations=MappingProxyType({n.job: n for n in nominations}),
            pods_by_job=PodsByJob(pods=by_key, groups=MappingProxyType(group_pods(by_key))),
        )


def group_pods(pods: Mapping[PodKey, PodState]) -> dict[JobKey, JobPods]:
    """Pods grouped by job, each job's by pod key (jobs in order of their first pod key)."""
    groups: dict[JobKey, list[tuple[PodKey, PodState]]] = {}
    for item in sorted(pods.items()):
        job = item[1].pod.job
        members = groups.get(job)
        if members is None:
            groups[job] = [item]
        else:
            members.append(item)
    return {job: tuple(members) for job, members in groups.items()}


class ClusterView:
    """The cluster as the scheduling services know it, updated one event at a time."""

    def __init__(self, *, with_default_queue: bool = True) -> None:
        self._nodes: dict[str, Node] = {}
        self._queues: dict[str, Queue] = {}
        if with_default_queue:
            self._queues[DEFAULT_QUEUE] = Queue(name=DEFAULT_QUEUE)
        self._podgroups: dict[JobKey, PodGroup] = {}
        self._first_seen: dict[JobKey, tuple[str, datetime]] = {}
        self._phases: dict[JobKey, tuple[PodGroupPhase, tuple[Condition, ...], str]] = {}
        self._conditions: dict[JobKey, tuple[Condition, ...]] = {}
        self._pods: dict[PodKey, Pod] = {}
        # Statuses, bindings and refusals are kept per pod uid: a restarted job reuses pod
        # names, and across topics the old pod's late status can arrive after the new pod.
        self._status: dict[PodKey, dict[str, tuple[PodPhase, str | None]]] = {}
        self._bindings: dict[PodKey, dict[str, tuple[str, int]]] = {}
        self._refusals: dict[PodKey, dict[str, int]] = {}
        self._refusal_ids: set[str] = set()
        self._evicting: dict[PodKey, dict[str, str]] = {}
        """Pod → uid → node of the evictions requested (the pod is Releasing)."""
        self._state: dict[PodKey, PodState] = {}
        self._by_job: dict[JobKey, dict[PodKey, PodState]] = {}
        """``_state`` grouped by the pods' jobs (kept by ``_set_state``)."""
        self._groups: dict[JobKey, JobPods] = {}
        """Each job's pods as a sorted tuple, made again only after one of them changed."""
        self._pg_states: dict[JobKey, tuple[tuple[object, ...], PodGroupState]] = {}
        """Each job's last ``PodGroupState`` and the objects it was made from."""
        self._reservation = Reservation()
        self._will_bind: dict[JobKey, WillBind] = {}
        self._nominations: dict[JobKey, Nomination] = {}

    # Folding ---------------------------------------------------------------------------
    def apply(self, event: ClusterEvent) -> None:  # noqa: PLR0915 - one case per event type
        """Fold one event into the view (idempotent; order across topics does not matter)."""
        match event:
            case (
                PodGroupCreated(podgroup=pg, occurred_at=at)
                | PodGroupUpdated(podgroup=pg, occurred_at=at)
            ):
                self._podgroups[pg.job] = pg
                seen = self._first_seen.get(pg.job)
                if seen is None or seen[0] != pg.uid:
                    self._first_seen[pg.job] = (pg.uid, at)
            case PodGroupDeleted(job=job):
                deleted = self._podgroups.pop(job, None)
                self._first_seen.pop(job, None)
                phase = self._phases.get(job)
                # A restarted job's PodGroup comes back under the same name; the new one's
                # phase (podgroups.status) can arrive before the old one's deletion
                # (podgroups): keep a phase that belongs to another incarnation.
                if phase is None or deleted is None or phase[2] in ("", deleted.uid):
                    self._phases.pop(job, None)
                self._conditions.pop(job, None)
                held = self._will_bind.get(job)
                if held is not None and not held.pods:
                    del self._will_bind[job]
            case PodGroupPhaseChanged(job=job, phase=phase, conditions=conditions, uid=uid):
                self._phases[job] = (phase, conditions, uid)
            case PodGroupConditionsChanged(job=job, conditions=conditions):
                self._conditions[job] = conditions
            case PodCreated(pod=pod):
                key = pod_key(pod.namespace, pod.name)
                self._pods[key] = pod
                self._compose(key)
            case PodDeleted(pod=key, pod_uid=uid):
                current = self._pods.get(key)
                if not uid or current is None or current.uid == uid:
                    self._pods.pop(key, None)
                    self._set_state(key, None)
                for table in (self._status, self._bindings, self._refusals, self._evicting):
                    if uid:
                        table.get(key, {}).pop(uid, None)
                        if not table.get(key, True):
                            table.pop(key, None)
                    else:
                        table.pop(key, None)
            case PodPhaseChanged(pod=key, phase=phase, node=node, pod_uid=uid):
                self._status.setdefault(key, {})[uid] = (phase, node)
                self._compose(key)
            case BindingRefused(pod=key, node=node, event_id=event_id, pod_uid=uid):
                if event_id in self._refusal_ids:
                    return
                self._refusal_ids.add(event_id)
                bound = _of(self._bindings, key, uid)
                if bound is None or bound[0] == node:
                    refusals = self._refusals.setdefault(key, {})
                    refusals[uid] = refusals.get(uid, 0) + 1
                status = _of(self._status, key, uid)
                if status is not None and status[1] == node and status[0] is PodPhase.PENDING:
                    self._status.get(key, {}).pop(uid, None)
                self._compose(key)
            case BindingCreated(pod=pod, node=node, attempt=attempt):
                key = pod_key(pod.namespace, pod.name)
                previous = _of(self._bindings, key, pod.uid)
                if previous is None or attempt >= previous[1]:
                    self._bindings.setdefault(key, {})[pod.uid] = (node, attempt)
                self._compose(key)
            case PodEvictionRequested(pod=key, pod_uid=uid, node=node):
                self._evicting.setdefault(key, {})[uid] = node
                self._compose(key)
            case NodeRegistered(node=node) | NodeChanged(node=node):
                self._nodes[node.name] = node
            case NodeRemoved(name=name):
                self._nodes.pop(name, None)
            case QueueDeclared(queue=queue):
                self._queues[queue.name] = queue
            case QueueDeleted(name=name):
                self._queues.pop(name, None)
            case TargetJobElected() | NodesLocked() | NodesUnlocked():
                self._reservation = fold_reservation(self._reservation, event)
            case CapacityReserved() | CapacityReleased():
                folded = fold_will_bind(self._will_bind.get(event.job), event)
                if folded is None:
                    self._will_bind.pop(event.job, None)
                else:
                    self._will_bind[event.job] = folded
            case LocksHonoured() | LocksLifted():
                pass  # the allocator's note that it has the locks; the locks are folded above
            case PodsNominated():
                self._nominations[event.job] = Nomination(
                    job=event.job,
                    podgroup=event.podgroup,
                    uid=event.uid,
                    pods=event.pods,
                    until=event.until,
                    victims=event.victims,
                    reason=event.reason,
                    message=event.message,
                )
            case NominationEnded(job=job, uid=uid):
                nominated = self._nominations.get(job)
                if nominated is not None and (not uid or nominated.uid == uid):
                    del self._nominations[job]
            case _:
                assert_never(event)

    def assume(self, decisions: Iterable[ClusterEvent]) -> None:
        """Take the cycle's own outputs as applied, before they come back from the topics.

        Pods just bound count as Binding on their node until ``pods.status`` confirms them,
        so the next cycle does not place them twice; phase changes and reservation events of
        podgroup-enqueue are not decided twice either.
        """
        for event in decisions:
            self.apply(event)

    def _compose(self, key: PodKey) -> None:
        pod = self._pods.get(key)
        if pod is None:
            self._set_state(key, None)
            return
        refusals = _of(self._refusals, key, pod.uid) or 0
        status = _of(self._status, key, pod.uid)
        if status is not None and (status[0] is not PodPhase.PENDING or status[1]):
            releasing = status[0] in _LIVE and _of(self._evicting, key, pod.uid) is not None
            self._set_state(
                key,
                PodState(
                    pod=pod,
                    phase=status[0],
                    node=status[1],
                    attempt=refusals,
                    releasing=releasing,
                ),
            )
            return
        bound = _of(self._bindings, key, pod.uid)
        if bound is not None and bound[1] >= refusals:
            self._set_state(key, PodState(pod=pod, node=bound[0], binding=True, attempt=refusals))
            return
        phase = status[0] if status is not None else PodPhase.PENDING
        self._set_state(key, PodState(pod=pod, phase=phase, attempt=refusals))

    def _set_state(self, key: PodKey, state: PodState | None) -> None:
        """Set (or, with ``None``, remove) a pod's state, keeping the per-job groups."""
        previous = self._state.get(key)
        if previous is not None:
            job = previous.pod.job
            if state is None or state.pod.job != job:
                members = self._by_job[job]
                del members[key]
                if not members:
                    del self._by_job[job]
                self._groups.pop(job, None)
        if state is None:
            self._state.pop(key, None)
            return
        self._state[key] = state
        job = state.pod.job
        self._by_job.setdefault(job, {})[key] = state
        self._groups.pop(job, None)

    # Reading ---------------------------------------------------------------------------
    def snapshot(self) -> ClusterSnapshot:
        """Return a frozen copy of the view for one cycle."""
        podgroups: dict[JobKey, PodGroupState] = {}
        made = self._pg_states
        kept: dict[JobKey, tuple[tuple[object, ...], PodGroupState]] = {}
        for job in sorted(self._podgroups):
            podgroup = self._podgroups[job]
            phases = self._phases.get(job)
            conditions = self._conditions.get(job)
            seen = self._first_seen.get(job)
            sources = (podgroup, phases, conditions, seen)
            last = made.get(job)
            if last is not None and all(map(operator.is_, last[0], sources)):
                kept[job] = last
                podgroups[job] = last[1]
                continue
            phase, status_conditions, uid = phases or (PodGroupPhase.PENDING, (), "")
            if uid and podgroup.uid and uid != podgroup.uid:
                phase, status_conditions = PodGroupPhase.PENDING, ()
            state = PodGroupState(
                podgroup=podgroup,
                phase=phase,
                conditions=conditions or (),
                status_conditions=status_conditions,
                first_seen=seen[1] if seen is not None else None,
            )
            kept[job] = (sources, state)
            podgroups[job] = state
        self._pg_states = kept
        groups = self._groups
        for job, members in self._by_job.items():
            if job not in groups:
                groups[job] = tuple(sorted(members.items()))
        pods = MappingProxyType(dict(self._state))
        return ClusterSnapshot(
            nodes=MappingProxyType(dict(self._nodes)),
            queues=MappingProxyType(dict(self._queues)),
            podgroups=MappingProxyType(podgroups),
            pods=pods,
            reservation=self._reservation,
            will_bind=MappingProxyType({k: self._will_bind[k] for k in sorted(self._will_bind)}),
            nominations=MappingProxyType(
                {k: self._nominations[k] for k in sorted(self._nominations)}
            ),
            pods_by_job=PodsByJob(pods=pods, groups=MappingProxyType(dict(groups))),
        )

    @classmethod
    def from_snapshot(cls, snapshot: ClusterSnapshot) -> ClusterView:
        """Return a view holding exactly what ``snapshot`` holds."""
        view = cls(with_default_queue=False)
        view._nodes = dict(snapshot.nodes)
        view._queues = dict(snapshot.queues)
        for job, state in snapshot.podgroups.items():
            view._podgroups[job] = state.podgroup
            view._phases[job] = (state.phase, state.status_conditions, state.podgroup.uid)
            if state.first_seen is not None:
                view._first_seen[job] = (state.podgroup.uid, state.first_seen)
            if state.conditions:
                view._conditions[job] = state.conditions
        for key, pod_state in snapshot.pods.items():
            view._pods[key] = pod_state.pod
            uid = pod_state.pod.uid
            if pod_state.attempt:
                view._refusals[key] = {uid: pod_state.attempt}
            if pod_state.binding and pod_state.node:
                view._bindings[key] = {uid: (pod_state.node, pod_state.attempt)}
            elif pod_state.node or pod_state.phase is not PodPhase.PENDING:
                view._status[key] = {uid: (pod_state.phase, pod_state.node)}
            if pod_state.releasing and pod_state.node:
                view._evicting[key] = {uid: pod_state.node}
            view._compose(key)
        view._reservation = snapshot.reservation
        view._will_bind = dict(snapshot.will_bind)
        view._nominations = dict(snapshot.nominations)
        return view

    def set_phase(self, job: JobKey, phase: PodGroupPhase) -> None:
        """Set a PodGroup's phase directly (snapshot scenarios, which run without enqueue)."""
        _, conditions, uid = self._phases.get(job, (PodGroupPhase.PENDING, (), ""))
        self._phases[job] = (phase, conditions, uid)

    def confirm_bindings(self) -> None:
        """Treat every assumed binding as confirmed by the cluster (snapshot scenarios)."""
        for key, state in sorted(self._state.items()):
            if state.binding and state.node:
                self._status.setdefault(key, {})[state.pod.uid] = (PodPhase.PENDING, state.node)
                self._compose(key)

    # Scenario documents (DESIGN §9) ------------------------------------------------------
    @classmethod
    def from_scenario(cls, doc: Mapping[str, object]) -> ClusterView:
        """Build a view from a DESIGN §9 snapshot scenario document.

        It reads ``nodes``, ``queues``, ``podgroups`` (optional ``firstSeen`` and, for a
        dependent one, ``stages``: ``[{name, replicas, minAvailable, requests,
        nodeSelector, tolerations, priority}]``), ``pods``, the optional ``reservation``
        (``{target, locked, electedAt, generation}``), ``willBind`` (``[{job, pods: [{task,
        index, node, requests}], reservedAt, expiresAt, timedOut}]``) and
        ``priorityClasses``.

        Raises:
            ScenarioError: when an entry is malformed.
        """
        view = cls(with_default_queue=True)
        classes = _mapping(doc.get("priorityClasses"), "priorityClasses")
        view.add_scenario_objects(doc, classes)
        reservation = _mapping(doc.get("reservation"), "reservation")
        if reservation:
            target = reservation.get("target")
            locked = _list(reservation.get("locked"), "reservation.locked")
            generation = _int(reservation.get("generation"), "reservation.generation", 1)
            view._reservation = Reservation(
                target_job=JobKey(str(target)) if target else None,
                locked_nodes=frozenset(str(n) for n in locked),
                elected_at=_timestamp(reservation.get("electedAt"), "reservation.electedAt"),
                generation=generation if target else 0,
            )
        for raw in _list(doc.get("willBind"), "willBind"):
            held = _will_bind(raw, view._podgroups)
            view._will_bind[held.job] = held
        return view

    def add_scenario_objects(
        self,
        doc: Mapping[str, object],
        classes: Mapping[str, object],
        *,
        seen_at: datetime | None = None,
    ) -> None:
        """Add the ``nodes``, ``queues``, ``podgroups`` and ``pods`` of a scenario document.

        Args:
            doc: a scenario document, or the ``add`` part of one of its timeline events.
            classes: priority class name → value.
            seen_at: when the PodGroups are first seen, unless an entry gives ``firstSeen``.

        Raises:
            ScenarioError: when an entry is malformed.
        """
        for index, raw in enumerate(_list(doc.get("nodes"), "nodes")):
            node = _read(read_node, raw, f"nodes[{index}]")
            self._nodes[node.name] = node
        for index, raw in enumerate(_list(doc.get("queues"), "queues")):
            queue = _read(read_queue, raw, f"queues[{index}]")
            self._queues[queue.name] = queue
        for raw in _list(doc.get("podgroups"), "podgroups"):
            pg, phase = _podgroup(raw, classes)
            self._podgroups[pg.job] = pg
            self._phases[pg.job] = (phase, (), pg.uid)
            first_seen = _timestamp(_mapping(raw, "podgroups[]").get("firstSeen"), pg.job)
            if first_seen is None:
                first_seen = seen_at
            if first_seen is not None:
                self._first_seen[pg.job] = (pg.uid, first_seen)
        for raw in _list(doc.get("pods"), "pods"):
            pod, pod_phase, where = _pod(raw, classes)
            key = pod_key(pod.namespace, pod.name)
            self._pods[key] = pod
            if where or pod_phase is not PodPhase.PENDING:
                self._status[key] = {pod.uid: (pod_phase, where)}
            self._compose(key)


def _of(table: Mapping[PodKey, Mapping[str, T]], key: PodKey, uid: str) -> T | None:
    """The entry of pod ``key``'s incarnation ``uid`` (or of an event that named no uid)."""
    entries = table.get(key)
    if not entries:
        return None
    return entries[uid] if uid in entries else entries.get("")


def fold_reservation(
    current: Reservation, event: TargetJobElected | NodesLocked | NodesUnlocked
) -> Reservation:
    """Return the reservation after one ``reservations`` event (idempotent).

    An event of an older generation than the current one is stale and ignored; one of a
    newer generation starts a new reservation. Events without a generation (0, older
    writers) apply as they come.
    """
    generation = event.generation
    if generation and generation < current.generation:
        return current
    newer = generation > current.generation
    match event:
        case TargetJobElected(job=job, occurred_at=at):
            if not generation:
                return replace(current, target_job=job, elected_at=at)
            if not newer:
                return current
            return Reservation(
                target_job=job, elected_at=at, generation=generation, backoff=current.backoff
            )
        case NodesLocked(job=job, nodes=nodes, occurred_at=at):
            if newer:
                return Reservation(
                    target_job=job,
                    locked_nodes=frozenset(nodes),
                    elected_at=at,
                    generation=generation,
                    locked_at=at,
                    backoff=current.backoff,
                )
            if generation and current.target_job is None:
                return current
            locked_at = at if current.locked_at is None else max(current.locked_at, at)
            return replace(
                current,
                target_job=current.target_job or job,
                locked_nodes=current.locked_nodes | frozenset(nodes),
                locked_at=locked_at,
            )
        case NodesUnlocked(job=job, nodes=nodes, occurred_at=at):
            if generation or current.target_job in (None, job):
                return Reservation(
                    generation=max(generation, current.generation),
                    backoff=with_backoff(current.backoff, job, event.backoff_until, at),
                )
            return replace(current, locked_nodes=current.locked_nodes - frozenset(nodes))
        case _:
            assert_never(event)


def fold_will_bind(
    current: WillBind | None, event: CapacityReserved | CapacityReleased
) -> WillBind | None:
    """Return a job's will-bind reservation after one ``capacity.reservations`` event.

    The event's ``held`` replaces what is held (the topic is keyed by job, so a job's events
    arrive in order; applying one twice changes nothing). A release of an older PodGroup
    incarnation than the one held is stale and ignored. A timeout leaves an empty entry
    marked ``timed_out``, so no new reservation is made for that PodGroup; any other release
    of everything removes the entry (``None``).
    """
    same = current is not None and (not event.uid or not current.uid or current.uid == event.uid)
    match event:
        case CapacityReserved(held=held, pods=pods, occurred_at=at):
            reserved_at = current.reserved_at if same and current is not None else at
            return WillBind(
                job=event.job,
                podgroup=event.podgroup,
                uid=event.uid,
                pods=held or pods,
                reserved_at=reserved_at,
                expires_at=event.expires_at,
            )
        case CapacityReleased(held=held, reason=reason):
            if current is not None and not same:
                return current
            if current is None:
                if reason != WILL_BIND_TIMEOUT:
                    return None
                return WillBind(
                    job=event.job, podgroup=event.podgroup, uid=event.uid, timed_out=True
                )
            timed_out = current.timed_out or reason == WILL_BIND_TIMEOUT
            if not held and not timed_out:
                return None
            return replace(current, pods=held, timed_out=timed_out)
        case _:
            assert_never(event)


class ScenarioError(ValueError):
    """A snapshot scenario entry that cannot be read; the message names it."""


def _list(raw: object, where: str) -> list[object]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise ScenarioError(f"{where} must be a list")
    return raw


def _mapping(raw: object, where: str) -> Mapping[str, object]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ScenarioError(f"{where} must be a mapping")
    return {str(k): v for k, v in raw.items()}


def _quantities(raw: object, where: str) -> dict[str, int]:
    values = _mapping(raw, where)
    clean: dict[str, str | int | float] = {}
    for name, value in values.items():
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            raise ScenarioError(f"{where}.{name} must be a quantity, got {value!r}")
        clean[name] = value
    try:
        return parse_resources(clean)
    except ValueError as exc:
        raise ScenarioError(f"{where}: {exc}") from exc


def _str_map(raw: object, where: str) -> dict[str, str]:
    return {k: str(v) for k, v in sorted(_mapping(raw, where).items())}


def _int(raw: object, where: str, default: int) -> int:
    if raw is None:
        return default
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise ScenarioError(f"{where} must be an integer, got {raw!r}")
    return raw


def _read(reader: Callable[[object], T], raw: object, where: str) -> T:
    """Read a Kubernetes object with :mod:`contracts.manifests`, naming its place on error."""
    try:
        return reader(raw)
    except ManifestError as exc:
        raise ScenarioError(exc.at(where)) from None


def _priority(raw: Mapping[str, object], classes: Mapping[str, object], where: str) -> int:
    if "priority" in raw and raw["priority"] is not None:
        return _int(raw["priority"], f"{where} priority", 0)
    class_name = raw.get("priorityClassName")
    if isinstance(class_name, str) and class_name:
        if class_name not in classes:
            raise ScenarioError(f"{where}: unknown priorityClassName {class_name!r}")
        return _int(classes[class_name], f"priorityClasses.{class_name}", 0)
    return 0


def _timestamp(raw: object, where: str) -> datetime | None:
    if raw is None:
        return None
    if isinstance(raw, datetime):
        return raw
    try:
        return msgspec.convert(str(raw), datetime)
    except msgspec.ValidationError as exc:
        raise ScenarioError(f"{where}: creationTimestamp {raw!r} is not a time") from exc


def _podgroup(raw: object, classes: Mapping[str, object]) -> tuple[PodGroup, PodGroupPhase]:
    entry = _mapping(raw, "podgroups[]")
    name = str(entry.get("name", ""))
    if not name:
        raise ScenarioError("every podgroup needs a name")
    namespace = str(entry.get("namespace", "default") or "default")
    where = f"podgroup {namespace}/{name}"
    phase_text = str(entry.get("phase", PodGroupPhase.PENDING.value))
    try:
        phase = PodGroupPhase(phase_text)
    except ValueError as exc:
        raise ScenarioError(f"{where}: unknown phase {phase_text!r}") from exc
    min_task = {
        k: _int(v, f"{where} minTaskMember.{k}", 0)
        for k, v in _mapping(entry.get("minTaskMember"), f"{where} minTaskMember").items()
    }
    pg = PodGroup(
        name=name,
        namespace=namespace,
        job=job_key(namespace, name),
        queue=str(entry.get("queue", DEFAULT_QUEUE) or DEFAULT_QUEUE),
        min_member=_int(entry.get("minMember"), f"{where} minMember", 0),
        min_task_member=dict(sorted(min_task.items())),
        min_resources=_quantities(entry.get("minResources"), f"{where} minResources"),
        priority=_priority(entry, classes, where),
        priority_class_name=str(entry.get("priorityClassName", "") or ""),
        annotations=_str_map(entry.get("annotations"), f"{where} annotations"),
        dependent=bool(entry.get("dependent", False)),
        uid=str(entry.get("uid", "") or f"{namespace}-{name}"),
        creation_timestamp=_timestamp(entry.get("creationTimestamp"), where),
        stages=tuple(
            _stage(raw_stage, classes, where)
            for raw_stage in _list(entry.get("stages"), f"{where} stages")
        ),
    )
    return pg, phase


def _stage(raw: object, classes: Mapping[str, object], where: str) -> StageTask:
    entry = _mapping(raw, f"{where} stages[]")
    name = str(entry.get("name", ""))
    if not name:
        raise ScenarioError(f"{where}: every stage needs a name")
    where = f"{where} stage {name}"
    replicas = _int(entry.get("replicas"), f"{where} replicas", 1)
    return StageTask(
        name=name,
        replicas=replicas,
        min_available=_int(entry.get("minAvailable"), f"{where} minAvailable", replicas),
        requests=_quantities(entry.get("requests"), f"{where} requests"),
        node_selector=_str_map(entry.get("nodeSelector"), f"{where} nodeSelector"),
        tolerations=_tolerations(entry.get("tolerations"), where),
        priority=_priority(entry, classes, where)
        if ("priority" in entry or "priorityClassName" in entry)
        else 1,
    )


def _tolerations(raw: object, where: str) -> tuple[Toleration, ...]:
    return tuple(
        Toleration(
            **{
                k: str(v)
                for k, v in _mapping(t, f"{where} toleration").items()
                if k in ("key", "operator", "value", "effect")
            }
        )
        for t in _list(raw, f"{where} tolerations")
    )


def _will_bind(raw: object, podgroups: Mapping[JobKey, PodGroup]) -> WillBind:
    entry = _mapping(raw, "willBind[]")
    job = JobKey(str(entry.get("job", "")))
    if "/" not in job:
        raise ScenarioError(f"willBind: job must be namespace/name, got {job!r}")
    where = f"willBind {job}"
    pods = []
    for raw_pod in _list(entry.get("pods"), f"{where} pods"):
        pod = _mapping(raw_pod, f"{where} pods[]")
        task = str(pod.get("task", ""))
        node = str(pod.get("node", ""))
        if not task or not node:
            raise ScenarioError(f"{where}: every pod needs a task and a node")
        pods.append(
            ReservedPod(
                task=task,
                index=_int(pod.get("index"), f"{where} {task} index", 0),
                node=NodeName(node),
                requests=_quantities(pod.get("requests"), f"{where} {task} requests"),
            )
        )
    group = podgroups.get(job)
    return WillBind(
        job=job,
        podgroup=str(entry.get("podgroup", "") or (group.name if group else "")),
        uid=str(entry.get("uid", "") or (group.uid if group else "")),
        pods=tuple(sorted(pods, key=lambda p: (p.task, p.index))),
        reserved_at=_timestamp(entry.get("reservedAt"), f"{where} reservedAt"),
        expires_at=_timestamp(entry.get("expiresAt"), f"{where} expiresAt"),
        timed_out=bool(entry.get("timedOut", False)),
    )


def pod_index(name: str) -> int:
    """Return a pod's index from its name: the last ``-`` segment when the name has ≥ 3."""
    parts = name.split("-")
    if len(parts) >= 3 and parts[-1].isdigit():
        return int(parts[-1])
    return 0


def _pod(raw: object, classes: Mapping[str, object]) -> tuple[Pod, PodPhase, str | None]:
    entry = _mapping(raw, "pods[]")
    name = str(entry.get("name", ""))
    if not name:
        raise ScenarioError("every pod needs a name")
    namespace = str(entry.get("namespace", "default") or "default")
    where = f"pod {namespace}/{name}"
    group = str(entry.get("podgroup", "") or "")
    if not group:
        raise ScenarioError(f"{where}: podgroup is required")
    phase_text = str(entry.get("phase", PodPhase.PENDING.value))
    try:
        phase = PodPhase(phase_text)
    except ValueError as exc:
        raise ScenarioError(f"{where}: unknown phase {phase_text!r}") from exc
    node = entry.get("node")
    tolerations = _tolerations(entry.get("tolerations"), where)
    pod = Pod(
        name=name,
        namespace=namespace,
        job=job_key(namespace, group),
        task=str(entry.get("task", "") or ""),
        index=_int(entry.get("index"), f"{where} index", pod_index(name)),
        podgroup=group,
        uid=str(entry.get("uid", "") or f"{namespace}-{name}"),
        queue=str(entry.get("queue", DEFAULT_QUEUE) or DEFAULT_QUEUE),
        requests=_quantities(entry.get("requests"), f"{where} requests"),
        priority=_priority(entry, classes, where)
        if ("priority" in entry or "priorityClassName" in entry)
        else 1,
        node_selector=_str_map(entry.get("nodeSelector"), f"{where} nodeSelector"),
        tolerations=tolerations,
        annotations=_str_map(entry.get("annotations"), f"{where} annotations"),
        creation_timestamp=_timestamp(entry.get("creationTimestamp"), where),
    )
    return pod, phase, (str(node) if node else None)

"""The scheduler's view of the cluster, folded from the state topics.

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
- Volcano's ``ScheduleStartTimestamp`` (stamped by enqueue the first time it sees a job) is
  ``PodGroupState.first_seen``: the ``occurred_at`` of the first ``podgroups`` event of that
  PodGroup uid, so it is the same after a restart that replays the topic.
- A ``PodGroupPhaseChanged`` that names a PodGroup uid other than the current one (a late
  change of a deleted PodGroup) does not set the phase of its successor.
- What the cluster holds for particular jobs (the reservation of ``reservations``, the
  will-bind reservations of ``capacity.reservations``, nominations) is part of the snapshot,
  folded by ``holds`` (``fold_reservation``, ``fold_will_bind``, ``fold_nomination``).
- For the session cache (``framework.session_cache``), a view's snapshots keep the objects of
  what did not change: a ``PodGroupState`` is the same object from one snapshot to the next
  until something of its PodGroup changes, a ``PodState`` until its pod changes, and
  ``pods_by_job`` gives each job's pods (by pod key) as one tuple, the same tuple until one
  of them changes. Every change makes new objects.
"""

from __future__ import annotations

import operator
from collections import OrderedDict, deque
from collections.abc import Iterable, Mapping
from datetime import datetime
from types import MappingProxyType
from typing import TypeVar, assert_never

from vcbus.contracts.events.bindings import BindingCreated, PodEvictionRequested
from vcbus.contracts.events.capacity_reservations import (
    CapacityReleased,
    CapacityReserved,
    LocksHonoured,
    LocksLifted,
    NominationEnded,
    PodsNominated,
)
from vcbus.contracts.events.nodes import NodeChanged, NodeHeartbeat, NodeRegistered, NodeRemoved
from vcbus.contracts.events.podgroups import PodGroupCreated, PodGroupDeleted, PodGroupUpdated
from vcbus.contracts.events.podgroups_conditions import PodGroupConditionsChanged
from vcbus.contracts.events.podgroups_status import PodGroupPhaseChanged
from vcbus.contracts.events.pods import PodCreated, PodDeleted
from vcbus.contracts.events.pods_status import BindingRefused, PodPhaseChanged
from vcbus.contracts.events.queues import QueueDeclared, QueueDeleted
from vcbus.contracts.events.reservations import NodesLocked, NodesUnlocked, TargetJobElected
from vcbus.contracts.keys import JobKey, PodKey, pod_key
from vcbus.contracts.manifests import read_node, read_queue
from vcbus.contracts.objects.meta import Condition
from vcbus.contracts.objects.node import Node
from vcbus.contracts.objects.pod import Pod, PodPhase
from vcbus.contracts.objects.podgroup import PodGroup, PodGroupPhase
from vcbus.contracts.objects.queue import DEFAULT_QUEUE, Queue
from vcbus.core.scheduling.holds import (
    Nomination,
    Reservation,
    WillBind,
    fold_nomination,
    fold_reservation,
    fold_will_bind,
)
from vcbus.core.scheduling.model import naive_utc
from vcbus.core.scheduling.scenario_objects import (
    as_list,
    as_mapping,
    as_timestamp,
    read_manifest,
    read_pod,
    read_podgroup,
    read_reservation,
    read_will_bind,
)
from vcbus.core.scheduling.snapshot import (
    ClusterSnapshot,
    JobChanges,
    JobPods,
    PodGroupState,
    PodsByJob,
    PodState,
)

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
    | NodeHeartbeat
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

CHANGE_LOG = 16
"""How many snapshots' changed jobs a view keeps (``JobChanges.log``): a session cache
that missed more snapshots than that builds its session from every job."""
GONE_LIMIT = 1 << 16
"""How many deleted pods' uids, and refused bindings' event ids, a view remembers
(docs/design.md#bounded-records): enough to cover the records still in flight about them."""


class ClusterView:
    """The cluster as the scheduling services know it, updated one event at a time."""

    def __init__(self, *, with_default_queue: bool = True) -> None:
        self._nodes: dict[str, Node] = {}
        self._heartbeats: dict[str, NodeHeartbeat] = {}
        """Each real node's latest heartbeat (docs/design.md#real-nodes; simulated nodes send
        none), kept after the node is removed."""
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
        self._refusal_ids: OrderedDict[str, None] = OrderedDict()
        """The refusals folded, newest last, to fold each once (the last ``GONE_LIMIT``)."""
        self._gone: OrderedDict[str, None] = OrderedDict()
        """Uids of deleted pods, newest last (the last ``GONE_LIMIT``): a pod's uid is never
        reused (the job-controller counts each pod's incarnations), so a status, binding or
        eviction that arrives after its pod's deletion is dropped, not kept forever."""
        self._evicting: dict[PodKey, dict[str, str]] = {}
        """Pod → uid → node of the evictions requested (the pod is Releasing)."""
        self._started: dict[PodKey, dict[str, datetime]] = {}
        """Pod → uid → when it was first reported Running."""
        self._state: dict[PodKey, PodState] = {}
        self._by_job: dict[JobKey, dict[PodKey, PodState]] = {}
        """``_state`` grouped by the pods' jobs (kept by ``_set_state``)."""
        self._groups: dict[JobKey, JobPods] = {}
        """Each job's pods as a sorted tuple, made again only after one of them changed."""
        self._pg_states: dict[JobKey, tuple[tuple[object, ...], PodGroupState]] = {}
        """Each job's last ``PodGroupState`` and the objects it was made from."""
        self._pg_values: dict[JobKey, PodGroupState] = {}
        """Each job's last ``PodGroupState`` (those of ``_pg_states``)."""
        self._pg_dirty: set[JobKey] = set()
        """The jobs whose PodGroup, phase, conditions or first sight changed since the last
        snapshot (each write to those adds the job)."""
        self._pods_changed: set[JobKey] = set()
        """The jobs whose pods changed since the last snapshot (``_set_state``)."""
        self._snapshots = 0
        """How many snapshots the view made (``JobChanges.number``)."""
        self._token = object()
        """The view's identity in its snapshots' ``JobChanges``."""
        self._change_log: deque[tuple[int, frozenset[JobKey]]] = deque(maxlen=CHANGE_LOG)
        """The last snapshots' changed jobs (``JobChanges.log``)."""
        self._reservation = Reservation()
        self._will_bind: dict[JobKey, WillBind] = {}
        self._nominations: dict[JobKey, Nomination] = {}
        self._snapshot: ClusterSnapshot | None = None
        """The last snapshot, while nothing was folded since (a cycle's and its next-due
        rules' reads share it)."""

    # Folding ---------------------------------------------------------------------------
    def apply(self, event: ClusterEvent) -> None:  # noqa: PLR0915 - one case per event type
        """Fold one event into the view (idempotent; order across topics does not matter)."""
        self._snapshot = None
        match event:
            case (
                PodGroupCreated(podgroup=pg, occurred_at=at)
                | PodGroupUpdated(podgroup=pg, occurred_at=at)
            ):
                self._podgroups[pg.job] = pg
                self._pg_dirty.add(pg.job)
                seen = self._first_seen.get(pg.job)
                if seen is None or seen[0] != pg.uid:
                    self._first_seen[pg.job] = (pg.uid, at)
            case PodGroupDeleted(job=job):
                self._pg_dirty.add(job)
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
                self._pg_dirty.add(job)
            case PodGroupConditionsChanged(job=job, conditions=conditions):
                self._conditions[job] = conditions
                self._pg_dirty.add(job)
            case PodCreated(pod=pod):
                key = pod_key(pod.namespace, pod.name)
                self._pods[key] = pod
                self._compose(key)
            case PodDeleted(pod=key, pod_uid=uid):
                current = self._pods.get(key)
                if not uid or current is None or current.uid == uid:
                    self._pods.pop(key, None)
                    self._set_state(key, None)
                for table in (
                    self._status,
                    self._bindings,
                    self._refusals,
                    self._evicting,
                    self._started,
                ):
                    if uid:
                        table.get(key, {}).pop(uid, None)
                        if not table.get(key, True):
                            table.pop(key, None)
                    else:
                        table.pop(key, None)
                if uid:
                    _remember(self._gone, uid)
            case PodPhaseChanged(pod=key, phase=phase, node=node, pod_uid=uid, occurred_at=at):
                if uid in self._gone:
                    return
                self._status.setdefault(key, {})[uid] = (phase, node)
                if phase is PodPhase.RUNNING:
                    self._started.setdefault(key, {}).setdefault(uid, at)
                self._compose(key)
            case BindingRefused(pod=key, node=node, event_id=event_id, pod_uid=uid):
                if event_id in self._refusal_ids or uid in self._gone:
                    return
                _remember(self._refusal_ids, event_id)
                bound = _of(self._bindings, key, uid)
                if bound is None or bound[0] == node:
                    refusals = self._refusals.setdefault(key, {})
                    refusals[uid] = refusals.get(uid, 0) + 1
                status = _of(self._status, key, uid)
                if status is not None and status[1] == node and status[0] is PodPhase.PENDING:
                    self._status.get(key, {}).pop(uid, None)
                self._compose(key)
            case BindingCreated(pod=pod, node=node, attempt=attempt):
                if pod.uid in self._gone:
                    return
                key = pod_key(pod.namespace, pod.name)
                previous = _of(self._bindings, key, pod.uid)
                if previous is None or attempt >= previous[1]:
                    self._bindings.setdefault(key, {})[pod.uid] = (node, attempt)
                self._compose(key)
            case PodEvictionRequested(pod=key, pod_uid=uid, node=node):
                if uid in self._gone:
                    return
                self._evicting.setdefault(key, {})[uid] = node
                self._compose(key)
            case NodeRegistered(node=node) | NodeChanged(node=node):
                self._nodes[node.name] = node
            case NodeRemoved(name=name):
                # a removed real node keeps its last heartbeat: its pods are lost at once
                self._nodes.pop(name, None)
            case NodeHeartbeat(name=name, at=at, node=node):
                last = self._heartbeats.get(name)
                if last is None or naive_utc(at) >= naive_utc(last.at):
                    self._heartbeats[name] = event
                    self._nodes[name] = node
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
            case PodsNominated() | NominationEnded():
                nominated = fold_nomination(self._nominations.get(event.job), event)
                if nominated is None:
                    self._nominations.pop(event.job, None)
                else:
                    self._nominations[event.job] = nominated
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
                    started=_of(self._started, key, pod.uid),
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
                self._pods_changed.add(job)
        if state is None:
            self._state.pop(key, None)
            return
        self._state[key] = state
        job = state.pod.job
        self._by_job.setdefault(job, {})[key] = state
        self._groups.pop(job, None)
        self._pods_changed.add(job)

    # Reading ---------------------------------------------------------------------------
    def held_entries(self) -> int:
        """How many per-pod entries the view holds besides its pods' states.

        Statuses, bindings, refusals, evictions and start times, per pod uid: none is left
        once every pod is deleted, whatever arrives after the deletion.
        """
        tables = (self._status, self._bindings, self._refusals, self._evicting, self._started)
        return sum(len(by_uid) for table in tables for by_uid in table.values())

    def snapshot(self) -> ClusterSnapshot:
        """Return a frozen copy of the view for one cycle (the last one, if unchanged since)."""
        if self._snapshot is None:
            self._snapshot = self._make_snapshot()
        return self._snapshot

    def _make_snapshot(self) -> ClusterSnapshot:
        made, values = self._pg_states, self._pg_values
        self._snapshots += 1
        pods_changed, self._pods_changed = self._pods_changed, set()
        self._change_log.append((self._snapshots, frozenset(self._pg_dirty | pods_changed)))
        for job in self._pg_dirty:
            podgroup = self._podgroups.get(job)
            if podgroup is None:
                made.pop(job, None)
                values.pop(job, None)
                continue
            phases = self._phases.get(job)
            conditions = self._conditions.get(job)
            seen = self._first_seen.get(job)
            sources = (podgroup, phases, conditions, seen)
            last = made.get(job)
            if last is not None and all(map(operator.is_, last[0], sources)):
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
            made[job] = (sources, state)
            values[job] = state
        self._pg_dirty.clear()
        podgroups = values.copy()  # ``copy``: no slow path after deletions, as ``dict()`` has
        groups = self._groups
        for job in pods_changed:  # a job's group is dropped only as its pods change
            members = self._by_job.get(job)
            if members and job not in groups:
                groups[job] = tuple(sorted(members.items()))
        pods = MappingProxyType(self._state.copy())
        frozen = MappingProxyType(podgroups)
        return ClusterSnapshot(
            nodes=MappingProxyType(self._nodes.copy()),
            heartbeats=MappingProxyType(self._heartbeats.copy()),
            queues=MappingProxyType(self._queues.copy()),
            podgroups=frozen,
            pods=pods,
            reservation=self._reservation,
            will_bind=MappingProxyType({k: self._will_bind[k] for k in sorted(self._will_bind)}),
            nominations=MappingProxyType(
                {k: self._nominations[k] for k in sorted(self._nominations)}
            ),
            pods_by_job=PodsByJob(pods=pods, groups=MappingProxyType(groups.copy())),
            changes=JobChanges(
                view=self._token,
                number=self._snapshots,
                log=self._change_log,
                podgroups=frozen,
                pods=pods,
            ),
        )

    @classmethod
    def from_snapshot(cls, snapshot: ClusterSnapshot) -> ClusterView:
        """Return a view holding exactly what ``snapshot`` holds."""
        view = cls(with_default_queue=False)
        view._nodes = dict(snapshot.nodes)
        view._heartbeats = dict(snapshot.heartbeats)
        view._queues = dict(snapshot.queues)
        for job, state in snapshot.podgroups.items():
            view._pg_dirty.add(job)
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
        self._snapshot = None
        _, conditions, uid = self._phases.get(job, (PodGroupPhase.PENDING, (), ""))
        self._phases[job] = (phase, conditions, uid)
        self._pg_dirty.add(job)

    def confirm_bindings(self) -> None:
        """Treat every assumed binding as confirmed by the cluster (snapshot scenarios)."""
        self._snapshot = None
        for key, state in sorted(self._state.items()):
            if state.binding and state.node:
                self._status.setdefault(key, {})[state.pod.uid] = (PodPhase.PENDING, state.node)
                self._compose(key)

    # Scenario documents (docs/design.md#scenarios)
    # ------------------------------------------------------
    @classmethod
    def from_scenario(cls, doc: Mapping[str, object]) -> ClusterView:
        """Build a view from a snapshot scenario document (see ``scenario_objects``).

        Raises:
            ScenarioError: when an entry is malformed.
        """
        view = cls(with_default_queue=True)
        classes = as_mapping(doc.get("priorityClasses"), "priorityClasses")
        view.add_scenario_objects(doc, classes)
        reservation = read_reservation(doc.get("reservation"))
        if reservation is not None:
            view._reservation = reservation
        for raw in as_list(doc.get("willBind"), "willBind"):
            held = read_will_bind(raw, view._podgroups)
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
        self._snapshot = None
        for index, raw in enumerate(as_list(doc.get("nodes"), "nodes")):
            node = read_manifest(read_node, raw, f"nodes[{index}]")
            self._nodes[node.name] = node
        for index, raw in enumerate(as_list(doc.get("queues"), "queues")):
            queue = read_manifest(read_queue, raw, f"queues[{index}]")
            self._queues[queue.name] = queue
        for raw in as_list(doc.get("podgroups"), "podgroups"):
            pg, phase = read_podgroup(raw, classes)
            self._podgroups[pg.job] = pg
            self._pg_dirty.add(pg.job)
            self._phases[pg.job] = (phase, (), pg.uid)
            first_seen = as_timestamp(as_mapping(raw, "podgroups[]").get("firstSeen"), pg.job)
            if first_seen is None:
                first_seen = seen_at
            if first_seen is not None:
                self._first_seen[pg.job] = (pg.uid, first_seen)
        for raw in as_list(doc.get("pods"), "pods"):
            pod, pod_phase, where = read_pod(raw, classes)
            key = pod_key(pod.namespace, pod.name)
            self._pods[key] = pod
            if where or pod_phase is not PodPhase.PENDING:
                self._status[key] = {pod.uid: (pod_phase, where)}
            self._compose(key)


def _remember(recent: OrderedDict[str, None], item: str) -> None:
    """Add ``item`` as the newest of ``recent``, forgetting the oldest past ``GONE_LIMIT``."""
    recent[item] = None
    recent.move_to_end(item)
    if len(recent) > GONE_LIMIT:
        recent.popitem(last=False)


def _of(table: Mapping[PodKey, Mapping[str, T]], key: PodKey, uid: str) -> T | None:
    """The entry of pod ``key``'s incarnation ``uid`` (or of an event that named no uid)."""
    entries = table.get(key)
    if not entries:
        return None
    return entries[uid] if uid in entries else entries.get("")

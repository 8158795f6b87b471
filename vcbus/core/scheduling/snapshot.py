"""The frozen snapshot of the cluster that one scheduling cycle reads.

A ``ClusterSnapshot`` is made by a ``ClusterView`` (``cluster_view``) at the start of a
cycle, or built from lists (``ClusterSnapshot.build``) by tests and scenarios. Besides the
nodes, queues, PodGroups and pods it carries what the cluster holds for particular jobs
(``holds``): the reservation, will-bind reservations and nominations.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType

from vcbus.contracts.events.nodes import NodeHeartbeat
from vcbus.contracts.keys import JobKey, PodKey, pod_key
from vcbus.contracts.objects.meta import Condition
from vcbus.contracts.objects.node import Node
from vcbus.contracts.objects.pod import Pod, PodPhase
from vcbus.contracts.objects.podgroup import PodGroup, PodGroupPhase
from vcbus.contracts.objects.queue import Queue
from vcbus.core.scheduling.holds import Nomination, Reservation, WillBind


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
    started: datetime | None = None
    """When it was first reported Running (its deadline counts from then)."""


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


JobPods = tuple[tuple[PodKey, PodState], ...]
"""A job's pods as ``(pod key, state)`` pairs, by pod key."""


@dataclass(frozen=True, slots=True)
class JobChanges:
    """The jobs that changed between a view's snapshots: a reading aid, not more state.

    Attributes:
        view: the view's identity (changes chain only between snapshots of one view).
        number: the snapshot's number in the view (each new snapshot is one more).
        log: the view's last snapshots' numbers, each with every job whose
            ``PodGroupState`` or pods are other objects than in the snapshot before (a job
            may be named and be the same); the view appends to it, oldest dropped first.
        podgroups: the mapping the changes describe (see ``pods``).
        pods: the mapping the changes describe: a snapshot uses the changes only when
            these are its own ``podgroups`` and ``pods``.
    """

    view: object
    number: int
    log: Sequence[tuple[int, frozenset[JobKey]]]
    podgroups: Mapping[JobKey, PodGroupState]
    pods: Mapping[PodKey, PodState]

    def since(self, number: int) -> frozenset[JobKey] | None:
        """The jobs changed since the view's snapshot ``number``, if the log still has them."""
        if number == self.number:
            return frozenset()
        if number > self.number:
            return None
        log = tuple(self.log)  # one step under the GIL: the view may append meanwhile
        entries = [(n, jobs) for n, jobs in log if number < n <= self.number]
        if len(entries) != self.number - number:
            return None
        if len(entries) == 1:
            return entries[0][1]
        return frozenset().union(*(jobs for _, jobs in entries))


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
    heartbeats: Mapping[str, NodeHeartbeat] = field(default_factory=lambda: MappingProxyType({}))
    """Each real node's latest heartbeat, removed nodes' too; simulated nodes
    have none."""
    queues: Mapping[str, Queue] = field(default_factory=lambda: MappingProxyType({}))
    podgroups: Mapping[JobKey, PodGroupState] = field(default_factory=lambda: MappingProxyType({}))
    """Every PodGroup by job, in no particular order (a walk that needs one sorts)."""
    pods: Mapping[PodKey, PodState] = field(default_factory=lambda: MappingProxyType({}))
    reservation: Reservation = Reservation()
    will_bind: Mapping[JobKey, WillBind] = field(default_factory=lambda: MappingProxyType({}))
    nominations: Mapping[JobKey, Nomination] = field(default_factory=lambda: MappingProxyType({}))
    """Preemptors' pods waiting for the capacity their victims release (preempt, reclaim)."""
    pods_by_job: PodsByJob | None = field(default=None, compare=False, repr=False)
    """``pods`` grouped by job, when the snapshot comes from a ``ClusterView``."""
    changes: JobChanges | None = field(default=None, compare=False, repr=False)
    """The jobs changed since the view's previous snapshot, when it comes from a view."""

    def job_changes(self) -> JobChanges | None:
        """The jobs changed since the view's previous snapshot, when they describe this one."""
        changes = self.changes
        if changes is None or changes.podgroups is not self.podgroups:
            return None
        return changes if changes.pods is self.pods else None

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
        heartbeats: Iterable[NodeHeartbeat] = (),
    ) -> ClusterSnapshot:
        """Build a snapshot from lists (tests, scenarios)."""
        by_key = MappingProxyType({pod_key(p.pod.namespace, p.pod.name): p for p in pods})
        return cls(
            nodes=MappingProxyType({n.name: n for n in nodes}),
            heartbeats=MappingProxyType({h.name: h for h in heartbeats}),
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

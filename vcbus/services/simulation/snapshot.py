"""Snapshot scenarios: run scheduling cycles on a given state, report the outcome.

``run_snapshot_scenario`` backs ``vcbus simulate`` in snapshot mode: it builds a
``ClusterView`` from the document and runs ``cycles`` cycles with the document's configuration
(default ``allocate, backfill``). A cycle runs the enqueue-side actions (``elect``,
``enqueue``, ``reserve``) in one session, as podgroup-enqueue does, folds its events (phase
changes, elections, locks, unlocks) into the view, then runs the other actions (``allocate``,
``backfill``) in a second session on the updated view, as the allocator does. It returns the
bindings made, each PodGroup's phase, conditions and reason, the target job and the locked
nodes, the will-bind reservations held at the end, and a timeline with one entry per cycle
(bindings, phase changes, reservation changes, will-bind reservations made and released).
Same input, same output.

Document keys besides the snapshot (``nodes``, ``queues``, ``podgroups``, ``pods``,
``priorityClasses``, ``reservation``): ``config``, ``cycles`` (default 1), ``now`` (default
``2026-01-01T00:00:00Z``), ``step`` (seconds per cycle, default 1) and ``events``, a timeline
of ``{at: seconds, ...}`` entries applied at the start of the first cycle at or after ``at``:
``{pod: ns/name, phase: Succeeded}``, ``{add: {podgroups: [...], pods: [...]}}``,
``{delete-podgroup: ns/name}`` (with its pods), ``{add-node: {...}}``, ``{remove-node: name}``.
A pod annotated ``vcbus.io/run-seconds`` finishes that long after it was bound (or after the
start, for pods given on a node): Succeeded, or Failed when ``vcbus.io/exit-code`` is not 0.

Deliberate deviations:
- Between cycles the bindings of a cycle are taken as confirmed by the cluster (the pods are
  Bound on their nodes), since no other service runs in this mode.
- Without enqueue-side actions, the phases computed by the allocator's session are applied
  (nobody else would); with them, only podgroup-enqueue's phases are, as in the services, so a
  PodGroup bound in one cycle shows Running from the next (Volcano's enqueue.go).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import assert_never, cast

import msgspec

from vcbus.contracts._base import derive_event_id
from vcbus.contracts.events.bindings import BindingCreated
from vcbus.contracts.events.nodes import NodeRemoved
from vcbus.contracts.events.podgroups import PodGroupDeleted
from vcbus.contracts.events.podgroups_conditions import PodGroupConditionsChanged
from vcbus.contracts.events.pods import PodDeleted
from vcbus.contracts.events.pods_status import PodPhaseChanged
from vcbus.contracts.events.reservations import NodesLocked, NodesUnlocked, TargetJobElected
from vcbus.contracts.keys import JobKey, NodeName, PodKey
from vcbus.contracts.manifests import ManifestError, read_as
from vcbus.contracts.objects.pod import ANNOTATION_EXIT_CODE, ANNOTATION_RUN_SECONDS, PodPhase
from vcbus.core.scheduling.cluster_view import ClusterView
from vcbus.core.scheduling.events import (
    ReservationEvent,
    WillBindEvent,
    describe_will_bind,
    eviction_events,
    nomination_events,
    phase_events,
    reservation_events,
    will_bind_events,
)
from vcbus.core.scheduling.framework.conf import ConfError, SchedulerConf
from vcbus.core.scheduling.framework.results import BindDecision, EvictDecision, SessionResult
from vcbus.core.scheduling.holds import Reservation
from vcbus.core.scheduling.scenario_objects import ScenarioError
from vcbus.core.scheduling.scheduler import conf_from_mapping, run_session, split_conf
from vcbus.core.scheduling.snapshot import ClusterSnapshot

DEFAULT_NOW = datetime(2026, 1, 1, tzinfo=UTC)

__all__ = [
    "ConfError",
    "CycleRecord",
    "ScenarioError",
    "Simulation",
    "TimelineEvent",
    "run_snapshot_scenario",
    "simulation_of",
]

_TERMINAL = (PodPhase.SUCCEEDED, PodPhase.FAILED)


@dataclass(frozen=True, slots=True)
class TimelineEvent:
    """One ``events`` entry of a scenario: what happens ``at`` seconds after the start."""

    at: float
    entry: Mapping[str, object]


@dataclass(frozen=True, slots=True)
class CycleRecord:
    """What one cycle did.

    Attributes:
        cycle: its number, from 0.
        elapsed: seconds since the start.
        finished: pods that finished before the cycle ran (``ns/name`` → phase).
        reservation_events: podgroup-enqueue's elections, locks and unlocks.
        phases: PodGroup phase changes published (``ns/name`` → phase).
        reservation_at_allocation: the reservation the allocator's session saw.
        decisions: the allocator's bindings.
        reservation: the reservation at the end of the cycle.
        will_bind: the allocator's will-bind reservations made and released.
        locks_lifted: the allocator placed the target and lifted its locks in this cycle
            (other jobs' bindings after the target's may use the locked nodes).
    """

    cycle: int
    elapsed: float
    finished: Mapping[str, str]
    reservation_events: tuple[ReservationEvent, ...]
    phases: Mapping[str, str]
    reservation_at_allocation: Reservation
    decisions: tuple[BindDecision, ...]
    reservation: Reservation
    enqueue_result: SessionResult | None = None
    enqueue_snapshot: ClusterSnapshot | None = None
    will_bind: tuple[WillBindEvent, ...] = ()
    locks_lifted: bool = False
    evictions: tuple[EvictDecision, ...] = ()
    """Pods preempt and reclaim evicted."""

    def timeline_entry(self) -> dict[str, object]:
        """The cycle as the scenario output's ``timeline`` shows it (keys sorted).

        ``evictions`` (``ns/pod`` → reason) appears only in cycles that evicted.
        """
        extra: dict[str, object] = {}
        if self.evictions:
            extra["evictions"] = {str(e.key): e.reason for e in self.evictions}
        return {
            **extra,
            "bindings": {str(d.key): d.node for d in self.decisions},
            "cycle": self.cycle,
            "finished": dict(self.finished),
            "lockedNodes": sorted(self.reservation.locked_nodes),
            "locksLifted": self.locks_lifted,
            "phases": dict(self.phases),
            "reservation": [_describe(e) for e in self.reservation_events],
            "targetJob": self.reservation.target_job,
            "time": self.elapsed,
            "willBind": [describe_will_bind(e) for e in self.will_bind],
        }


def _describe(event: ReservationEvent) -> str:
    match event:
        case TargetJobElected(job=job, reason=reason):
            return f"elected {job} ({reason})"
        case NodesLocked(job=job, nodes=nodes, reason=reason):
            return f"locked {', '.join(nodes)} for {job} ({reason})"
        case NodesUnlocked(job=job, nodes=nodes, reason=reason):
            return f"unlocked {', '.join(nodes) or 'no node'} for {job} ({reason})"
        case _:
            assert_never(event)


@dataclass
class Simulation:
    """Cycles of podgroup-enqueue then the allocator over one ``ClusterView``, on a clock.

    Attributes:
        view: the cluster; changed by every cycle and by the methods below.
        conf: the scheduler configuration (both sides' actions in one list).
        start: the time of cycle 0.
        step: the time between cycles.
        events: the timeline still to apply, in time order.
        classes: priority class name → value, for added PodGroups and pods.
    """

    view: ClusterView
    conf: SchedulerConf
    start: datetime = DEFAULT_NOW
    step: timedelta = timedelta(seconds=1)
    events: list[TimelineEvent] = field(default_factory=list)
    classes: Mapping[str, object] = field(default_factory=dict)
    cycle: int = 0
    started: dict[PodKey, datetime] = field(default_factory=dict)
    bindings: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.events = sorted(self.events, key=lambda e: e.at)
        for key, state in self.view.snapshot().pods.items():
            if state.node and state.phase not in _TERMINAL:
                self.started.setdefault(key, self.start)
        self.enqueue_conf, self.allocate_conf = split_conf(self.conf)

    @property
    def now(self) -> datetime:
        """The time of the next cycle."""
        return self.start + self.step * self.cycle

    # Changes from outside -----------------------------------------------------------------
    def set_pod_phase(self, key: PodKey, phase: PodPhase) -> None:
        """Report a pod's new phase, as the cluster would."""
        state = self.view.snapshot().pods.get(key)
        if state is None:
            return
        self.view.apply(
            PodPhaseChanged(
                event_id=derive_event_id("scenario.pod", key, f"{self.cycle}:{phase}"),
                occurred_at=self.now,
                pod=key,
                job=state.pod.job,
                task=state.pod.task,
                node=NodeName(state.node) if state.node else None,
                phase=phase,
                pod_uid=state.pod.uid,
            )
        )

    def delete_podgroup(self, job: JobKey) -> None:
        """Delete a PodGroup and its pods, as the job-controller would."""
        snapshot = self.view.snapshot()
        for key in sorted(snapshot.pods):
            if snapshot.pods[key].pod.job == job:
                self.view.apply(
                    PodDeleted(
                        event_id=derive_event_id("scenario.pod_deleted", key, self.cycle),
                        occurred_at=self.now,
                        job=job,
                        pod=key,
                    )
                )
        state = snapshot.podgroups.get(job)
        self.view.apply(
            PodGroupDeleted(
                event_id=derive_event_id("scenario.podgroup_deleted", job, self.cycle),
                occurred_at=self.now,
                job=job,
                name=state.podgroup.name if state is not None else "",
            )
        )

    def add(self, doc: Mapping[str, object]) -> None:
        """Add nodes, queues, PodGroups (first seen now) and pods given as in a scenario."""
        self.view.add_scenario_objects(doc, self.classes, seen_at=self.now)
        for key, state in self.view.snapshot().pods.items():
            if state.node and state.phase not in _TERMINAL:
                self.started.setdefault(key, self.now)

    def _apply_timeline(self, elapsed: float) -> None:
        while self.events and self.events[0].at <= elapsed:
            self._apply_entry(self.events.pop(0).entry)

    def _apply_entry(self, entry: Mapping[str, object]) -> None:
        if "pod" in entry:
            phase_text = str(entry.get("phase", PodPhase.SUCCEEDED.value))
            try:
                phase = PodPhase(phase_text)
            except ValueError as exc:
                raise ScenarioError(f"events: unknown pod phase {phase_text!r}") from exc
            self.set_pod_phase(PodKey(str(entry["pod"])), phase)
        elif "add" in entry:
            add = entry["add"]
            if not isinstance(add, Mapping):
                raise ScenarioError("events: add must be a mapping of podgroups, pods, nodes")
            self.add({str(k): v for k, v in add.items()})
        elif "delete-podgroup" in entry:
            self.delete_podgroup(JobKey(str(entry["delete-podgroup"])))
        elif "add-node" in entry:
            self.add({"nodes": [entry["add-node"]]})
        elif "remove-node" in entry:
            name = NodeName(str(entry["remove-node"]))
            self.view.apply(
                NodeRemoved(
                    event_id=derive_event_id("scenario.node_removed", name, self.cycle),
                    occurred_at=self.now,
                    name=name,
                )
            )
        else:
            raise ScenarioError(
                f"events: entry {dict(entry)!r} names none of pod, add, delete-podgroup, "
                "add-node, remove-node"
            )

    def _finish_pods(self) -> dict[str, str]:
        finished: dict[str, str] = {}
        snapshot = self.view.snapshot()
        for key in sorted(self.started):
            state = snapshot.pods.get(key)
            if state is None or state.phase in _TERMINAL:
                self.started.pop(key)
                continue
            raw = state.pod.annotations.get(ANNOTATION_RUN_SECONDS)
            if raw is None:
                continue
            try:
                seconds = float(raw)
            except ValueError:
                continue
            if self.now < self.started[key] + timedelta(seconds=seconds):
                continue
            exit_code = state.pod.annotations.get(ANNOTATION_EXIT_CODE, "0").strip()
            phase = PodPhase.SUCCEEDED if exit_code in ("", "0") else PodPhase.FAILED
            self.set_pod_phase(key, phase)
            self.started.pop(key)
            finished[str(key)] = phase.value
        return finished

    # One cycle ------------------------------------------------------------------------------
    def run_cycle(self) -> CycleRecord:
        """Run one cycle: timeline, finished pods, podgroup-enqueue, then the allocator."""
        now = self.now
        elapsed = (now - self.start).total_seconds()
        self._apply_timeline(elapsed)
        finished = self._finish_pods()
        phases: dict[str, str] = {}
        reservations: tuple[ReservationEvent, ...] = ()
        enqueue_result: SessionResult | None = None
        enqueue_snapshot: ClusterSnapshot | None = None
        if self.enqueue_conf.actions:
            enqueue_snapshot = self.view.snapshot()
            enqueue_result = run_session(enqueue_snapshot, self.enqueue_conf, now=now)
            reservations = reservation_events(enqueue_result, now)
            published = phase_events(enqueue_snapshot, enqueue_result, now)
            self.view.assume((*reservations, *published))
            phases = {str(e.job): e.phase.value for e in published if e.previous_phase != e.phase}
        snapshot = self.view.snapshot()
        decisions: tuple[BindDecision, ...] = ()
        will_bind: tuple[WillBindEvent, ...] = ()
        evictions: tuple[EvictDecision, ...] = ()
        lifted = False
        if self.allocate_conf.actions:
            result = run_session(snapshot, self.allocate_conf, now=now)
            decisions = result.decisions
            evictions = result.evictions
            lifted = result.locks_lifted and bool(snapshot.reservation.locked_nodes)
            will_bind = will_bind_events(result, now)
            self._assume_allocation(result, now)
            self.view.assume(will_bind)
        self.view.confirm_bindings()
        for decision in decisions:
            self.started[decision.key] = now
            self.bindings[str(decision.key)] = decision.node
        record = CycleRecord(
            cycle=self.cycle,
            elapsed=elapsed,
            finished=finished,
            reservation_events=reservations,
            phases=phases,
            reservation_at_allocation=snapshot.reservation,
            decisions=decisions,
            reservation=self.view.snapshot().reservation,
            enqueue_result=enqueue_result,
            enqueue_snapshot=enqueue_snapshot,
            will_bind=will_bind,
            locks_lifted=lifted,
            evictions=evictions,
        )
        self.cycle += 1
        return record

    def _assume_allocation(self, result: SessionResult, now: datetime) -> None:
        for event in (*nomination_events(result, now), *eviction_events(result, now)):
            self.view.apply(event)
        for decision in result.decisions:
            self.view.apply(
                BindingCreated(
                    event_id=derive_event_id("scenario.binding", decision.key, self.cycle),
                    occurred_at=now,
                    pod=decision.pod,
                    node=NodeName(decision.node),
                    attempt=decision.attempt,
                )
            )
        for update in result.podgroup_updates:
            if not self.enqueue_conf.actions:
                self.view.set_phase(update.job, update.phase)
            if update.conditions_changed:
                self.view.apply(
                    PodGroupConditionsChanged(
                        event_id=derive_event_id("scenario.conditions", update.job, self.cycle),
                        occurred_at=now,
                        job=update.job,
                        podgroup=update.podgroup,
                        conditions=update.conditions,
                    )
                )


def run_snapshot_scenario(doc: Mapping[str, object]) -> dict[str, object]:
    """Run a docs/design.md#scenarios snapshot scenario.

    Args:
        doc: the decoded scenario (see the module docstring for its keys).

    Returns:
        ``{"bindings": {"ns/pod": node}, "lockedNodes": [...], "podgroups": {"ns/name":
        {"phase", "conditions", "reason"}}, "targetJob": job or None, "timeline": [...]}``,
        keys sorted; ``timeline`` has one entry per cycle (bindings, phase changes,
        reservation changes, target job and locked nodes after it, will-bind changes);
        ``willBind`` maps each job to the pods still reserved for it.

    Raises:
        ScenarioError: a malformed entry.
        ConfError: an unknown action or plugin, or a malformed configuration.
    """
    simulation = simulation_of(doc)
    cycles = _settings(doc).cycles
    if cycles < 0:
        raise ScenarioError(f"cycles must be a non-negative integer, got {cycles!r}")
    timeline = [simulation.run_cycle().timeline_entry() for _ in range(cycles)]
    final = simulation.view.snapshot()
    podgroups: dict[str, object] = {}
    for job in sorted(final.podgroups):
        state = final.podgroups[job]
        reason = state.status_conditions[0] if state.status_conditions else None
        podgroups[str(job)] = {
            "conditions": msgspec.to_builtins(state.conditions),
            "phase": state.phase.value,
            "reason": msgspec.to_builtins(reason) if reason is not None else None,
        }
    reservation = final.reservation
    will_bind = {
        str(job): [f"{p.task}-{p.index} on {p.node}" for p in held.pods]
        for job, held in sorted(final.will_bind.items())
        if held.pods
    }
    return {
        "bindings": dict(sorted(simulation.bindings.items())),
        "lockedNodes": sorted(reservation.locked_nodes),
        "podgroups": podgroups,
        "targetJob": str(reservation.target_job) if reservation.target_job else None,
        "timeline": timeline,
        "willBind": will_bind,
    }


def simulation_of(doc: Mapping[str, object]) -> Simulation:
    """Build the ``Simulation`` a scenario document describes (before any cycle).

    Raises:
        ScenarioError: a malformed entry.
        ConfError: an unknown action or plugin, or a malformed configuration.
    """
    settings = _settings(doc)
    # read-only: a Mapping[str, object] is a Mapping[object, object]
    conf = conf_from_mapping(cast("Mapping[object, object]", settings.config or {}))
    if settings.step < 0:
        raise ScenarioError(
            f"step must be a non-negative number of seconds, got {doc.get('step')!r}"
        )
    return Simulation(
        view=ClusterView.from_scenario(doc),
        conf=conf,
        start=settings.now or DEFAULT_NOW,
        step=timedelta(seconds=settings.step),
        events=_timeline(doc.get("events")),
        classes=dict(settings.priority_classes or {}),
    )


def _timeline(raw: object) -> list[TimelineEvent]:
    if raw is None:
        return []
    if not isinstance(raw, Sequence) or isinstance(raw, str):
        raise ScenarioError("events must be a list of {at: seconds, ...} entries")
    out = []
    for entry in raw:
        if not isinstance(entry, Mapping):
            raise ScenarioError(f"events: entry {entry!r} is not a mapping")
        at = entry.get("at", 0)
        if isinstance(at, bool) or not isinstance(at, int | float):
            raise ScenarioError(f"events: at must be a number of seconds, got {at!r}")
        out.append(
            TimelineEvent(at=float(at), entry={str(k): v for k, v in entry.items() if k != "at"})
        )
    return out


class ScenarioSettings(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """The settings of a scenario document, besides its snapshot objects and timeline.

    ``config`` is a volcano-scheduler.conf mapping, ``now`` the time of cycle 0, ``step``
    the seconds between cycles, ``cycles`` how many to run, ``priorityClasses`` name →
    value. Other keys are read elsewhere (the snapshot by ``ClusterView.from_scenario``,
    ``events`` by ``_timeline``).
    """

    config: dict[str, object] | None = None
    now: datetime | None = None
    step: float = 1.0
    cycles: int = 1
    priority_classes: dict[str, int] | None = None


def _settings(doc: Mapping[str, object]) -> ScenarioSettings:
    try:
        return read_as(doc, ScenarioSettings)
    except ManifestError as exc:
        raise ScenarioError(str(exc)) from None

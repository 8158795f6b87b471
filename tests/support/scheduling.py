"""Table-driven scheduler cases, after Volcano's ``pkg/scheduler/uthelper`` (``TestCommonStruct``:
``RegisterSession``, ``Run``, ``CheckAll``)."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from vcbus.contracts.keys import JobKey
from vcbus.contracts.objects.node import Node
from vcbus.contracts.objects.podgroup import PodGroupPhase
from vcbus.contracts.objects.queue import Queue
from vcbus.core.scheduling.actions import ACTIONS
from vcbus.core.scheduling.framework.conf import (
    Arguments,
    Configuration,
    Kind,
    PluginOption,
    Tier,
)
from vcbus.core.scheduling.framework.results import SessionResult
from vcbus.core.scheduling.framework.session import Session, close_session, open_session
from vcbus.core.scheduling.holds import Nomination, Reservation
from vcbus.core.scheduling.model import TaskStatus
from vcbus.core.scheduling.plugins import PLUGIN_BUILDERS
from vcbus.core.scheduling.scheduler import default_conf
from vcbus.core.scheduling.snapshot import ClusterSnapshot, PodGroupState, PodState

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def go_plugin(name: str, *enabled: Kind, arguments: Arguments | None = None) -> PluginOption:
    """A plugin option as Volcano's Go tests write it: only the listed flags are on."""
    return PluginOption(
        name=name,
        arguments=dict(arguments or {}),
        disabled=frozenset(set(Kind) - set(enabled)),
    )


def plugin(name: str, *, arguments: Arguments | None = None) -> PluginOption:
    """A plugin option as a configuration file writes it: every extension point on."""
    return PluginOption(name=name, arguments=dict(arguments or {}))


def tier(*options: PluginOption) -> Tier:
    """A tier of plugin options."""
    return Tier(plugins=tuple(options))


DEFAULT_TIERS: tuple[Tier, ...] = default_conf().tiers


@dataclass(frozen=True)
class SchedulingCase:
    """One scheduler case: inputs, the actions to run, and what to expect."""

    name: str
    origin: str
    """Provenance: ``volcano@<ver> <file> <TestName>/<case name>``, or ``vcbus …``."""
    podgroups: Sequence[PodGroupState] = ()
    pods: Sequence[PodState] = ()
    nodes: Sequence[Node] = ()
    queues: Sequence[Queue] = ()
    reservation: Reservation | None = None
    tiers: Sequence[Tier] = DEFAULT_TIERS
    actions: Sequence[str] = ("allocate",)
    configurations: Sequence[Configuration] = ()
    expect_binds: Mapping[str, str] | None = None
    """Exactly these bindings (``ns/pod`` → node)."""
    expect_bind_count: int | None = None
    expect_evicted: Collection[str] | None = None
    """Exactly these pods evicted (``ns/pod``, any order; Volcano ``ExpectEvicted`` +
    ``ExpectEvictNum``)."""
    nominations: Sequence[Nomination] = ()
    expect_pipelined: Mapping[str, Sequence[str]] | None = None
    """Job → the nodes its Pipelined tasks may be on (``ExpectPipeLined``)."""
    expect_phase: Mapping[str, PodGroupPhase] | None = None
    expect_condition: Mapping[str, str | None] | None = None
    """Job → the reason of its allocator condition (``None``: no condition)."""
    expect_task_status: Mapping[str, Mapping[TaskStatus, int]] | None = None
    expect_reason: Mapping[str, str | None] | None = None
    """Job → the reason code of its ``podgroups.status`` condition (``None``: none)."""
    expect_reservation: tuple[str | None, Collection[str]] | None = None
    """(target job, locked nodes) after the session."""
    bind_order: Sequence[str] | None = None
    """The bindings in the order they were decided."""
    note: str = ""
    """Where a decision of docs/design.md changes Volcano's outcome, and how."""
    now: datetime = field(default=NOW)


@dataclass(frozen=True)
class CaseRun:
    """What running a case produced."""

    session: Session
    result: SessionResult

    @property
    def binds(self) -> dict[str, str]:
        """The bindings, ``ns/pod`` → node."""
        return {str(d.key): d.node for d in self.result.decisions}


def snapshot_of(case: SchedulingCase) -> ClusterSnapshot:
    """The case's inputs as a snapshot."""
    return ClusterSnapshot.build(
        nodes=case.nodes,
        queues=case.queues,
        podgroups=case.podgroups,
        pods=case.pods,
        reservation=case.reservation,
        nominations=case.nominations,
    )


def run_case(case: SchedulingCase) -> CaseRun:
    """Run a case's actions in one session and check its expectations."""
    ssn = open_session(
        snapshot_of(case),
        case.tiers,
        builders=PLUGIN_BUILDERS,
        now=case.now,
        configurations=case.configurations,
        actions=case.actions,
    )
    for name in case.actions:
        ACTIONS[name]().execute(ssn)
    result = close_session(ssn)
    run = CaseRun(session=ssn, result=result)
    check(case, run)
    return run


def check(case: SchedulingCase, run: CaseRun) -> None:
    """Assert a case's expectations (``CheckAll``)."""
    binds = run.binds
    if case.expect_binds is not None:
        assert binds == dict(case.expect_binds), f"{case.name}: binds {binds}"
    if case.expect_evicted is not None:
        evicted = sorted(str(e.key) for e in run.result.evictions)
        assert evicted == sorted(case.expect_evicted), f"{case.name}: evicted {evicted}"
    if case.expect_bind_count is not None:
        assert len(binds) == case.expect_bind_count, f"{case.name}: binds {binds}"
    if case.bind_order is not None:
        order = [str(d.key) for d in run.result.decisions]
        assert order == list(case.bind_order), f"{case.name}: order {order}"
    if case.expect_pipelined is not None:
        for job, nodes in case.expect_pipelined.items():
            info = run.session.jobs[JobKey(job)]
            pipelined = info.tasks_by_status.get(TaskStatus.PIPELINED, {})
            assert pipelined, f"{case.name}: no task of {job} pipelined"
            for task in pipelined.values():
                assert task.node_name in nodes, f"{case.name}: {task.name} on {task.node_name}"
    if case.expect_phase is not None:
        phases = {str(u.job): u.phase for u in run.result.podgroup_updates}
        for job, wanted in case.expect_phase.items():
            state = run.session.snapshot.podgroups[JobKey(job)]
            got = phases.get(job, state.phase)
            assert got is wanted, f"{case.name}: {job} phase {got}"
    if case.expect_condition is not None:
        for job, reason in case.expect_condition.items():
            conditions = run.session.job_conditions.get(JobKey(job), ())
            first = conditions[0].reason if conditions else None
            assert first == reason, f"{case.name}: {job} condition {conditions}"
    if case.expect_reason is not None:
        updates = {str(u.job): u for u in run.result.status_updates}
        for job, reason in case.expect_reason.items():
            update = updates.get(job)
            if update is not None:
                conditions = update.conditions
            else:
                conditions = run.session.snapshot.podgroups[JobKey(job)].status_conditions
            code = conditions[0].reason if conditions else None
            assert code == reason, f"{case.name}: {job} reason {conditions}"
    if case.expect_reservation is not None:
        target, locked = case.expect_reservation
        reservation = run.session.reservation
        assert reservation.target_job == target, f"{case.name}: target {reservation}"
        assert reservation.locked_nodes == frozenset(locked), f"{case.name}: {reservation}"
    if case.expect_task_status is not None:
        for job, statuses in case.expect_task_status.items():
            info = run.session.jobs[JobKey(job)]
            for status, count in statuses.items():
                have = len(info.tasks_by_status.get(status, {}))
                assert have == count, f"{case.name}: {job} {status.value} {have}"

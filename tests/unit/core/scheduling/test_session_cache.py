"""A session built from the service's job recipes is the session built from scratch.

The services keep a ``SessionCache`` across cycles: a job whose ``PodGroupState`` and pods
are the same objects as last cycle is made from its recipe instead of derived again. These
tests walk a view through the changes the topics bring (phase change, binding, refusal, a job
deleted and created again under a new uid, a PodGroup phase change, a will-bind reservation,
a new node) and compare, after each, the session and the cycle outputs with and without the
cache.
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import Callable, Sequence
from dataclasses import fields, replace
from datetime import UTC, datetime, timedelta
from types import MappingProxyType

import msgspec
import pytest

from tests.support.builders import build_node, build_pod, build_podgroup, build_queue
from tests.unit.core.scheduling.will_bind_builders import build_mpi_podgroup
from vcbus.contracts import (
    BindingCreated,
    BindingRefused,
    CapacityReserved,
    NodeName,
    NodeRegistered,
    PodCreated,
    PodDeleted,
    PodGroupConditionsChanged,
    PodGroupCreated,
    PodGroupDeleted,
    PodGroupPhaseChanged,
    PodKey,
    PodPhaseChanged,
)
from vcbus.contracts.events.capacity_reservations import ReservedPod
from vcbus.contracts.keys import JobKey
from vcbus.contracts.objects.pod import Pod, PodPhase
from vcbus.contracts.objects.podgroup import PodGroupPhase
from vcbus.core.scheduling.actions import ACTIONS
from vcbus.core.scheduling.cluster_view import ClusterEvent, ClusterView
from vcbus.core.scheduling.framework.conf import SchedulerConf
from vcbus.core.scheduling.framework.feasibility import Feasibility
from vcbus.core.scheduling.framework.job_updater import SCHEDULED_CONDITIONS
from vcbus.core.scheduling.framework.session import Session, close_session, open_session
from vcbus.core.scheduling.framework.session_cache import SessionCache
from vcbus.core.scheduling.model import JobInfo, TaskInfo, TaskStatus
from vcbus.core.scheduling.plugins import PLUGIN_BUILDERS
from vcbus.core.scheduling.plugins.drf import DrfPlugin
from vcbus.core.scheduling.plugins.overcommit import OvercommitPlugin
from vcbus.core.scheduling.plugins.proportion import ProportionPlugin, QueueAttr
from vcbus.core.scheduling.resource import Resource
from vcbus.core.scheduling.scheduler import default_conf, default_enqueue_conf
from vcbus.core.scheduling.snapshot import ClusterSnapshot
from vcbus.core.step import Ctx
from vcbus.services.allocator.cycle import run_cycle as allocator_cycle
from vcbus.services.podgroup_enqueue.cycle import run_cycle as enqueue_cycle

T0 = datetime(2026, 1, 1, tzinfo=UTC)
CONF = default_conf()
ENQUEUE_CONF = default_enqueue_conf()
SMALL = {"cpu": "1", "memory": "1Gi"}
LARGE = {"cpu": "2", "memory": "2Gi"}


def _view() -> ClusterView:
    nodes = [build_node(f"n{i}", {"cpu": "4", "memory": "16Gi", "pods": 110}) for i in (1, 2, 3)]
    podgroups = [
        build_podgroup(
            "a", "ns", "default", 2, {"w": 2}, PodGroupPhase.RUNNING, min_resources={"cpu": "4"}
        ),
        build_podgroup("b", "ns", "default", 3, {"w": 3}, min_resources={"cpu": "3"}),
        build_podgroup("c", "ns", "default", 2, {"w": 1}, PodGroupPhase.PENDING),
        build_mpi_podgroup(),
    ]
    pods = [
        build_pod("ns", "a-w-0", "n1", PodPhase.RUNNING, SMALL, "a", task="w"),
        build_pod("ns", "a-w-1", "n2", PodPhase.RUNNING, LARGE, "a", task="w"),
        *(
            build_pod("ns", f"b-w-{i}", None, PodPhase.PENDING, SMALL, "b", task="w")
            for i in range(3)
        ),
        build_pod("ns", "c-w-0", None, PodPhase.PENDING, SMALL, "c", task="w"),
        build_pod("ns", "c-w-1", None, PodPhase.PENDING, None, "c", task="w"),
        *(
            build_pod("ns", f"mpi-worker-{i}", None, PodPhase.PENDING, {"cpu": "2"}, "mpi")
            for i in range(2)
        ),
        build_pod("ns", "orphan-w-0", "n3", PodPhase.RUNNING, SMALL, "orphan", task="w"),
    ]
    return ClusterView.from_snapshot(
        ClusterSnapshot.build(
            nodes=nodes,
            queues=[build_queue("default")],
            podgroups=podgroups,
            pods=pods,
        )
    )


def _pod(view: ClusterView, name: str) -> Pod:
    return view.snapshot().pods[PodKey(f"ns/{name}")].pod


def _phase(view: ClusterView, name: str, phase: PodPhase, node: str) -> PodPhaseChanged:
    pod = _pod(view, name)
    return PodPhaseChanged(
        event_id=f"phase-{name}-{phase}",
        occurred_at=T0,
        pod=PodKey(f"ns/{name}"),
        job=pod.job,
        task=pod.task,
        node=NodeName(node),
        phase=phase,
        pod_uid=pod.uid,
    )


def _bind(view: ClusterView, name: str, node: str) -> BindingCreated:
    return BindingCreated(
        event_id=f"bind-{name}", occurred_at=T0, pod=_pod(view, name), node=NodeName(node)
    )


def _refuse(view: ClusterView, name: str, node: str) -> BindingRefused:
    pod = _pod(view, name)
    return BindingRefused(
        event_id=f"refuse-{name}",
        occurred_at=T0,
        pod=PodKey(f"ns/{name}"),
        job=pod.job,
        task=pod.task,
        node=NodeName(node),
        reason="overcommitted",
        pod_uid=pod.uid,
    )


def _recreate_c(view: ClusterView) -> list[ClusterEvent]:
    snapshot = view.snapshot()
    old = snapshot.podgroups[JobKey("ns/c")].podgroup
    events: list[ClusterEvent] = [
        PodGroupDeleted(event_id="del-c", occurred_at=T0, job=old.job, name=old.name),
    ]
    for key, state in sorted(snapshot.pods.items()):
        if state.pod.job == old.job:
            events.append(
                PodDeleted(
                    event_id=f"del-{key}",
                    occurred_at=T0,
                    job=old.job,
                    pod=key,
                    pod_uid=state.pod.uid,
                )
            )
    new = msgspec.structs.replace(old, uid="c-second")
    events.append(PodGroupCreated(event_id="create-c2", occurred_at=T0, podgroup=new))
    for i in range(2):
        pod = build_pod("ns", f"c-w-{i}", None, PodPhase.PENDING, LARGE, "c", task="w").pod
        events.append(
            PodCreated(
                event_id=f"create-c2-{i}",
                occurred_at=T0,
                pod=msgspec.structs.replace(pod, uid=f"c-second-{i}"),
            )
        )
    return events


def _delete_job(name: str) -> Callable[[ClusterView], list[ClusterEvent]]:
    """The job's PodGroup and pods deleted (its pods' room on their nodes freed)."""

    def delete(view: ClusterView) -> list[ClusterEvent]:
        snapshot = view.snapshot()
        group = snapshot.podgroups[JobKey(f"ns/{name}")].podgroup
        events: list[ClusterEvent] = [
            PodDeleted(
                event_id=f"del-{key}", occurred_at=T0, job=group.job, pod=key, pod_uid=state.pod.uid
            )
            for key, state in sorted(snapshot.pods.items())
            if state.pod.job == group.job
        ]
        events.append(
            PodGroupDeleted(event_id=f"del-{name}", occurred_at=T0, job=group.job, name=group.name)
        )
        return events

    return delete


def _c_inqueue(view: ClusterView) -> list[ClusterEvent]:
    return [
        PodGroupPhaseChanged(
            event_id="c-inqueue",
            occurred_at=T0,
            job=JobKey("ns/c"),
            podgroup="c",
            phase=PodGroupPhase.INQUEUE,
            uid=view.snapshot().podgroups[JobKey("ns/c")].podgroup.uid,
        )
    ]


def _reserve_mpi(view: ClusterView) -> list[ClusterEvent]:
    held = (ReservedPod(task="master", index=0, node=NodeName("n3"), requests={"cpu": 2000}),)
    return [
        CapacityReserved(
            event_id="reserve-mpi",
            occurred_at=T0,
            job=JobKey("ns/mpi"),
            podgroup="mpi",
            uid=view.snapshot().podgroups[JobKey("ns/mpi")].podgroup.uid,
            pods=held,
            held=held,
            expires_at=T0 + timedelta(minutes=5),
        )
    ]


STEPS: Sequence[tuple[str, Callable[[ClusterView], list[ClusterEvent]]]] = (
    ("nothing changed", lambda view: []),
    ("pod phase change", lambda view: [_phase(view, "a-w-0", PodPhase.SUCCEEDED, "n1")]),
    ("binding", lambda view: [_bind(view, "b-w-0", "n3")]),
    ("refusal", lambda view: [_refuse(view, "b-w-0", "n3")]),
    ("job deleted and created again, new uid", _recreate_c),
    ("PodGroup phase change", _c_inqueue),
    ("will-bind reservation", _reserve_mpi),
    (
        "new node",
        lambda view: [
            NodeRegistered(
                event_id="n4",
                occurred_at=T0,
                node=build_node("n4", {"cpu": "8", "memory": "16Gi", "nvidia.com/gpu": 1}),
            )
        ],
    ),
    ("job deleted", _delete_job("a")),
)


# Comparable pictures of a session's working copy ---------------------------------------
def _task(task: TaskInfo) -> tuple[object, ...]:
    out: list[object] = []
    for f in fields(TaskInfo):
        value = getattr(task, f.name)
        if f.name == "vector":
            value = None if value is None else value.tolist()
        elif f.name == "resreq":
            value = list(value._amounts.items())
        out.append((f.name, value))
    return tuple(out)


def _job(job: JobInfo) -> tuple[object, ...]:
    out: list[object] = []
    job.tasks  # noqa: B018 - makes a job's tasks if a reader had not yet
    for f in fields(JobInfo):
        value = getattr(job, f.name)
        if f.name == "_lazy":
            continue  # gone once made
        if f.name == "_tasks":
            value = [(uid, _task(task)) for uid, task in value.items()]
        elif f.name == "_by_status":
            value = [(status, list(bucket)) for status, bucket in value.items()]
        elif f.name == "_checked":
            value = job._checked_roles()  # a memo: the recipe's, or worked out on first use
        elif f.name == "_made":
            value = [task.uid for task in value or ()]
        elif f.name == "_role_status":
            value = [(role, list(counts.items())) for role, counts in value.items()]
        elif f.name in {"allocated", "total_request"}:
            value = list(value._amounts.items())
        elif isinstance(value, dict):
            value = list(value.items())
        out.append((f.name, value))
    return tuple(out)


def picture(ssn: Session) -> dict[str, object]:
    """Everything ``_build`` made: jobs, tasks, counters, nodes and their accounting."""
    matrix = ssn.matrix
    for job in ssn.jobs.values():
        for uid, task in job.tasks.items():
            node = ssn.nodes.get(task.node_name or "")
            if node is not None and uid in node.tasks:
                assert node.tasks[uid] is task
    return {
        "jobs": [(key, _job(ssn.jobs[key])) for key in sorted(ssn.jobs)],
        "dimensions": matrix.dimensions,
        "accounting": [
            getattr(matrix, name).tolist()
            for name in ("allocatable", "idle", "used", "releasing", "pipelined", "pod_count")
        ],
        "node_tasks": [(n.name, list(n.tasks)) for n in ssn.node_list],
        "total": list(ssn.total_resource._amounts.items()),
        "queues": list(ssn.queues),
        "plugins": [_plugin(plugin) for _, plugin in ssn.plugins],
    }


def _amounts(value: object) -> object:
    if isinstance(value, Resource):
        return sorted(value._amounts.items())
    if isinstance(value, tuple):
        return tuple(_amounts(v) for v in value)
    return value


def _plugin(plugin: object) -> tuple[str, object]:
    """What a plugin worked out at session open over every job (kept between sessions)."""
    name = getattr(plugin, "name", "")
    if isinstance(plugin, ProportionPlugin):
        return name, (
            [
                (queue, [(f.name, _amounts(getattr(attr, f.name))) for f in fields(QueueAttr)])
                for queue, attr in sorted(plugin.queue_opts.items())
            ],
            sorted((key, _amounts(value)) for key, value in plugin.admitted.items()),
        )
    if isinstance(plugin, OvercommitPlugin):
        return name, (_amounts(plugin.inqueue), _amounts(plugin.idle))
    if isinstance(plugin, DrfPlugin):
        return name, sorted((key, _amounts(value)) for key, value in plugin.held.items())
    return name, None


def _open(
    snapshot: ClusterSnapshot, cache: SessionCache | None, conf: SchedulerConf = CONF
) -> Session:
    return open_session(
        snapshot, conf.tiers, builders=PLUGIN_BUILDERS, now=T0, actions=conf.actions, cache=cache
    )


def _walk() -> list[tuple[str, ClusterSnapshot]]:
    """The view's snapshot after each step."""
    view = _view()
    out = []
    for name, step in STEPS:
        for event in step(view):
            view.apply(event)
        out.append((name, view.snapshot()))
    return out


# Tests ---------------------------------------------------------------------------------
@pytest.mark.parametrize("conf", [CONF, ENQUEUE_CONF], ids=["allocator", "podgroup-enqueue"])
def test_a_session_from_the_cache_is_the_session_from_scratch_after_every_change(
    conf: SchedulerConf,
) -> None:
    cache = SessionCache()
    for name, snapshot in _walk():
        made = picture(_open(snapshot, cache, conf))
        assert made == picture(_open(snapshot, None, conf)), name


def test_cycles_with_the_cache_decide_what_cycles_without_it_decide() -> None:
    view, plain_view = _view(), _view()
    allocator_cache, enqueue_cache = SessionCache(), SessionCache()
    for number, (name, step) in enumerate(STEPS):
        for event in step(view):
            view.apply(event)
            plain_view.apply(event)
        ctx = Ctx(now=T0 + timedelta(seconds=number))
        enqueued = enqueue_cycle(view.snapshot(), ENQUEUE_CONF, ctx, cache=enqueue_cache)
        plain_enqueued = enqueue_cycle(plain_view.snapshot(), ENQUEUE_CONF, ctx)
        assert enqueued == plain_enqueued, name
        view.assume(enqueued.events)
        plain_view.assume(plain_enqueued.events)
        allocated = allocator_cycle(view.snapshot(), CONF, ctx, cache=allocator_cache)
        plain_allocated = allocator_cycle(plain_view.snapshot(), CONF, ctx)
        assert allocated == plain_allocated, name
        view.assume(allocated.events)
        plain_view.assume(plain_allocated.events)


def test_a_sessions_changes_do_not_reach_the_next_session() -> None:
    snapshot = _walk()[-1][1]
    cache = SessionCache()
    _open(snapshot, cache)
    first = _open(snapshot, cache)
    assert not cache.derived
    before = picture(first)
    for action in CONF.actions:
        ACTIONS[action]().execute(first)
    assert first.decisions, "the actions changed the first session"
    for job in first.jobs.values():
        for task in list(job.tasks.values()):
            job.update_task_status(task, TaskStatus.RELEASING)
            task.last_transaction = (TaskStatus.PENDING, None)
        job.task_min_available["w"] = 99
        job.nodes_fit_errors.clear()
    second = _open(snapshot, cache)
    assert not cache.derived
    assert picture(second) == before == picture(_open(snapshot, None))
    first_objects = {id(t) for j in first.jobs.values() for t in j.tasks.values()}
    assert not first_objects & {id(t) for j in second.jobs.values() for t in j.tasks.values()}
    for key, job in second.jobs.items():
        other = first.jobs[key]
        assert job is not other
        for name in ("tasks", "tasks_by_status", "task_min_available", "_status_count"):
            assert getattr(job, name) is not getattr(other, name)
        for role, counts in job._role_status.items():
            assert counts is not other._role_status.get(role)


def test_a_settled_job_is_the_same_object_until_a_session_touches_it() -> None:
    view = _view()
    a = JobKey("ns/a")
    view.apply(
        PodGroupConditionsChanged(
            event_id="scheduled-a",
            occurred_at=T0,
            job=a,
            podgroup="a",
            conditions=SCHEDULED_CONDITIONS,
        )
    )
    snapshot = view.snapshot()
    cache = SessionCache()
    _open(snapshot, cache)  # derives every job
    first = _open(snapshot, cache)  # makes them from their recipes
    second = _open(snapshot, cache)
    assert second.jobs[a] is first.jobs[a]  # settled: every pod Running, the gang ready
    assert a not in second.unsettled_jobs()
    task = next(iter(second.jobs[a].tasks.values()))
    second.evict_task(task)
    assert a in second.unsettled_jobs()
    third = _open(snapshot, cache)
    assert third.jobs[a] is not second.jobs[a]
    assert picture(third) == picture(_open(snapshot, None))


def test_only_the_changed_jobs_are_derived_again() -> None:
    view = _view()
    cache = SessionCache()
    _open(view.snapshot(), cache)
    assert cache.derived == tuple(JobKey(f"ns/{name}") for name in ("a", "b", "c", "mpi"))
    _open(view.snapshot(), cache)
    assert not cache.derived
    assert cache.reused == 4
    view.apply(_phase(view, "a-w-0", PodPhase.SUCCEEDED, "n1"))
    _open(view.snapshot(), cache)
    assert cache.derived == (JobKey("ns/a"),)
    assert cache.reused == 3
    for event in _c_inqueue(view):
        view.apply(event)
    _open(view.snapshot(), cache)
    assert cache.derived == (JobKey("ns/c"),)


def test_a_snapshot_not_from_a_view_is_checked_pod_by_pod() -> None:
    snapshot = _walk()[0][1]
    rebuilt = replace(snapshot, pods_by_job=None, pods=MappingProxyType(dict(snapshot.pods)))
    cache = SessionCache()
    _open(snapshot, cache)
    assert picture(_open(rebuilt, cache)) == picture(_open(rebuilt, None))
    assert not cache.derived


# The view keeps the objects of what did not change ----------------------------------------
def test_the_view_keeps_unchanged_podgroup_states_and_pod_groups() -> None:
    view = _view()
    first = view.snapshot()
    view.apply(_phase(view, "a-w-0", PodPhase.SUCCEEDED, "n1"))
    for event in _c_inqueue(view):
        view.apply(event)
    second = view.snapshot()
    assert first.pods_by_job is not None
    assert second.pods_by_job is not None
    a, b, c = JobKey("ns/a"), JobKey("ns/b"), JobKey("ns/c")
    assert second.podgroups[b] is first.podgroups[b]
    assert second.podgroups[a] is first.podgroups[a]
    assert second.podgroups[c] is not first.podgroups[c]
    assert second.pods_by_job.groups[b] is first.pods_by_job.groups[b]
    assert second.pods_by_job.groups[a] is not first.pods_by_job.groups[a]


@pytest.mark.parametrize("index", range(len(STEPS)))
def test_the_views_groups_are_the_snapshots_pods_by_job(index: int) -> None:
    snapshot = _walk()[index][1]
    assert snapshot.pods_by_job is not None
    assert dict(snapshot.job_pods()) == dict(replace(snapshot, pods_by_job=None).job_pods())


def test_a_copy_with_other_pods_does_not_use_the_views_groups() -> None:
    snapshot = _view().snapshot()
    fewer = {k: v for k, v in snapshot.pods.items() if v.pod.job != JobKey("ns/b")}
    copy = replace(snapshot, pods=MappingProxyType(fewer))
    assert JobKey("ns/b") not in copy.job_pods()
    assert JobKey("ns/b") in snapshot.job_pods()


def test_a_jobs_feasibility_is_judged_again_only_when_its_pods_or_the_nodes_change() -> None:
    snapshot = _walk()[-1][1]
    cache = SessionCache()
    first = _open(snapshot, cache)
    key = sorted(first.jobs)[0]
    verdict = first.feasibility.job(first.jobs[key])
    second = _open(snapshot, cache)
    assert second.feasibility.job(second.jobs[key]) is verdict
    bigger = {**snapshot.nodes, "n9": build_node("n9", {"cpu": "4", "memory": "16Gi"})}
    third = _open(replace(snapshot, nodes=MappingProxyType(bigger)), cache)
    judged = third.feasibility.job(third.jobs[key])
    assert judged is not verdict
    assert judged.usable.shape == (len(bigger),)
    scratch = Feasibility(third.matrix, third.total_resource).job(third.jobs[key])
    assert (judged.why, judged.usable.tolist(), judged.largest) == (
        scratch.why,
        scratch.usable.tolist(),
        scratch.largest,
    )


def test_the_queues_come_in_the_order_of_their_first_job_with_or_without_the_cache() -> None:
    queues = [build_queue(name) for name in ("q1", "q2", "q3")]
    podgroups = [
        build_podgroup(name, "ns", queue, 1, {"w": 1}, PodGroupPhase.RUNNING)
        for name, queue in (("a", "q3"), ("b", "missing"), ("c", "q1"), ("d", "q3"))
    ]
    pods = [
        build_pod("ns", f"{pg.podgroup.name}-w-0", "n1", PodPhase.RUNNING, SMALL, pg.podgroup.name)
        for pg in podgroups
    ]
    nodes = [build_node("n1", {"cpu": "8", "memory": "16Gi", "pods": 110})]
    view = ClusterView.from_snapshot(
        ClusterSnapshot.build(nodes=nodes, queues=queues, podgroups=podgroups, pods=pods)
    )
    cache = SessionCache()
    orders = []
    gone = PodGroupDeleted(event_id="x", occurred_at=T0, job=JobKey("ns/a"), name="a")
    for step in ([], [gone]):
        for event in step:
            view.apply(event)
        snapshot = view.snapshot()
        _open(snapshot, cache)
        cached = _open(snapshot, cache).queues_in_job_order()
        assert cached == _open(snapshot, None).queues_in_job_order()
        orders.append(cached)
    assert orders == [["q3", "q1"], ["q1", "q3"]]  # a (q3) first; once it is gone, c (q1)


def test_a_closed_session_is_freed_without_the_cyclic_collector() -> None:
    snapshot = _walk()[-1][1]
    ssn = _open(snapshot, SessionCache())
    for action in CONF.actions:
        ACTIONS[action]().execute(ssn)
    close_session(ssn)
    gone = weakref.ref(ssn)
    collecting = gc.isenabled()
    gc.disable()
    try:
        del ssn
        assert gone() is None  # freed by reference counting: no cycle holds it
    finally:
        if collecting:
            gc.enable()

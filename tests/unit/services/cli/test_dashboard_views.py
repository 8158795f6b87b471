"""The dashboard's view models and pages, from events folded into its store (no I/O)."""

from __future__ import annotations

import itertools
from datetime import timedelta

import msgspec

from tests.unit.services.cli.builders import (
    NOW,
    PREFIX,
    build_admitted,
    build_allocator_condition,
    build_node,
    build_phase,
    build_pod,
    build_podgroup,
    build_queue,
    build_rejected,
    build_status,
    elected,
    heartbeat,
    locked,
    pod_bound,
    pod_created,
    pod_deleted,
    pod_phase,
)
from vcbus.contracts import Event, PodGroupCreated
from vcbus.contracts.objects import PodGroupPhase
from vcbus.core.bus.outbox import event_record
from vcbus.core.bus.records import Record
from vcbus.services.cli.dashboard.job_detail import job_detail
from vcbus.services.cli.dashboard.pages import job_page, jobs_page, nodes_page, overview_page
from vcbus.services.cli.dashboard.store import DashboardStore
from vcbus.services.cli.dashboard.views import (
    JobFilter,
    job_list,
    node_cells,
    overview,
    queue_views,
)

JAEGER = "http://jaeger.example:16686/"
_offsets = itertools.count()


def store_of(*events: Event, history_jobs: int = 500) -> DashboardStore:
    store = DashboardStore(PREFIX, jobs=history_jobs)
    for event in events:
        out = event_record(event, PREFIX)
        store.fold(Record(out.topic, 0, next(_offsets), out.key, out.value, out.headers))
    return store


def with_requests(pod, cpu: int):
    return msgspec.structs.replace(pod, requests={"cpu": cpu, "memory": 1 << 30})


def running_job(key: str, *, queue: str = "default", cpu: int = 1000, node: str = "n1"):
    pods = [with_requests(build_pod(key, i), cpu) for i in range(2)]
    return (
        build_admitted(key),
        build_podgroup(key, queue=queue),
        build_phase(key, PodGroupPhase.RUNNING),
        build_status(key, "Running", running=2),
        *(pod_created(p) for p in pods),
        *(pod_bound(p, node) for p in pods),
        *(pod_phase(p, "Running", node) for p in pods),
    )


def waiting_job(key: str):
    return (
        build_admitted(key),
        build_podgroup(key),
        build_status(key, "Pending"),
        build_phase(key, PodGroupPhase.PENDING, reason="NotEnoughResources", message="cpu 9 > 8"),
        build_allocator_condition(key, "GangUnschedulable", "gang 0/2 ready"),
    )


def test_jobs_list_shows_each_job_with_its_ranked_reason_and_task_counts() -> None:
    store = store_of(*running_job("default/a"), *waiting_job("team/b"), build_rejected("team/c"))

    listing = job_list(store, JobFilter())

    assert [(r.key, r.phase, r.reason) for r in listing.rows] == [
        ("default/a", "Running", ""),
        ("team/b", "Pending", "NotEnoughResources"),
        ("team/c", "Rejected", "NegativeReplicas"),
    ]
    assert listing.rows[0].tasks[0].running == 2
    assert listing.namespaces == ("default", "team")
    assert listing.phases == ("Pending", "Running", "Rejected")


def test_jobs_filter_by_namespace_queue_and_phase_keeps_only_matching_rows() -> None:
    store = store_of(
        build_queue("gpu"), *running_job("default/a", queue="gpu"), *waiting_job("team/b")
    )

    by_queue = job_list(store, JobFilter(queue="gpu"))
    by_phase = job_list(store, JobFilter(phase="Pending"))
    by_namespace = job_list(store, JobFilter(namespace="team", phase="Running"))

    assert [r.key for r in by_queue.rows] == ["default/a"]
    assert [r.key for r in by_phase.rows] == ["team/b"]
    assert by_namespace.rows == ()
    assert by_namespace.total == 2


def test_job_detail_gives_reasons_conditions_pods_events_and_trace_link() -> None:
    pod = build_pod("team/b", 0)
    store = store_of(*waiting_job("team/b"), pod_created(pod), elected("team/b", 1))

    detail = job_detail(store, "team/b", jaeger_url=JAEGER)

    assert detail is not None
    assert detail.reasons[0][:2] == ("NotEnoughResources", "cpu 9 > 8")
    assert {c.source for c in detail.conditions} == {
        "jobs.status",
        "podgroups.status",
        "podgroups.conditions",
    }
    assert [(p.name, p.phase, p.node) for p in detail.pods] == [("b-worker-0", "Pending", "")]
    assert [(t.name, t.replicas, t.min_available, t.counts.pending) for t in detail.tasks] == [
        ("worker", "2", "2", 2)
    ]
    assert detail.reservation == "this job is the target"
    assert detail.trace_url == f"http://jaeger.example:16686/trace/{detail.trace_id}"
    reasons = [e.reason for e in detail.events]
    assert reasons[:2] == ["Admitted", "PodGroupCreated"]
    assert "Created" in reasons
    assert not any(".v1" in e.reason or not e.message for e in detail.events)
    assert job_detail(store, "team/none", jaeger_url=JAEGER) is None


def test_job_detail_of_a_rejected_job_lists_its_violations() -> None:
    detail = job_detail(store_of(build_rejected("team/c")), "team/c", jaeger_url=JAEGER)

    assert detail is not None
    assert detail.violations == (
        ("spec.tasks[0].replicas", "NegativeReplicas", "replicas must be >= 0"),
    )


def test_nodes_show_use_from_running_pods_and_the_job_a_node_is_locked_for() -> None:
    store = store_of(
        build_node("n1"),
        build_node("n2"),
        *running_job("default/a", cpu=2000, node="n1"),
        *waiting_job("team/b"),
        locked("team/b", ("n2",), 1),
    )

    cells = {c.name: c for c in node_cells(store)}

    assert cells["n1"].bars[0].used == 4000
    assert cells["n1"].bars[0].percent == 100
    assert cells["n1"].level == 4
    assert cells["n1"].pods == 2
    assert cells["n2"].locked_for == "team/b"
    assert cells["n2"].level == 0


def test_nodes_page_says_a_real_node_is_not_ready_with_its_heartbeat_and_limits() -> None:
    store = store_of(
        build_node("real"), heartbeat("real", 0, limits_enforced=False), build_node("sim")
    )
    store.now = lambda: NOW + timedelta(seconds=45)

    cells = {c.name: c for c in node_cells(store)}
    page = nodes_page(list(cells.values()))

    assert (cells["real"].status, cells["real"].heartbeat) == ("NotReady", "45s ago")
    assert (cells["sim"].status, cells["sim"].heartbeat, cells["sim"].limits) == ("Ready", "-", "-")
    assert '<p class="cordon">NotReady</p><p class="heartbeat">heartbeat 45s ago</p>' in page
    assert '<p class="cordon">limits not enforced</p>' in page
    assert page.count("heartbeat ") == 1


def test_a_finished_or_deleted_pod_frees_its_node() -> None:
    pod = with_requests(build_pod("default/a", 0), 1000)
    busy = store_of(
        build_node("n1"), pod_created(pod), pod_bound(pod, "n1"), pod_phase(pod, "Running", "n1")
    )
    done = store_of(
        build_node("n1"),
        pod_created(pod),
        pod_bound(pod, "n1"),
        pod_phase(pod, "Succeeded", "n1"),
    )
    gone = store_of(build_node("n1"), pod_created(pod), pod_bound(pod, "n1"), pod_deleted(pod))

    assert node_cells(busy)[0].bars[0].used == 1000
    assert node_cells(done)[0].bars[0].used == 0
    assert node_cells(gone)[0].bars[0].used == 0


def test_a_late_delete_of_an_old_incarnation_keeps_the_new_pods_requests() -> None:
    old = with_requests(build_pod("default/a", 0, uid="u1"), 1000)
    new = with_requests(build_pod("default/a", 0, uid="u2"), 3000)
    store = store_of(
        build_node("n1"),
        pod_created(old),
        pod_created(new),
        pod_deleted(old),
        pod_bound(new, "n1"),
        pod_phase(new, "Running", "n1"),
    )

    assert node_cells(store)[0].bars[0].used == 3000


def test_events_are_kept_for_the_most_recently_changed_jobs_only() -> None:
    store = store_of(
        build_status("default/a", "Pending"),
        build_status("default/b", "Pending"),
        build_status("default/a", "Running", at=1, running=2),
        build_status("default/c", "Pending"),
        history_jobs=2,
    )

    assert list(store.history) == ["default/a", "default/c"]
    detail = job_detail(store, "default/b", jaeger_url=JAEGER)
    assert detail is not None
    assert detail.events == ()
    shown = job_detail(store, "default/a", jaeger_url=JAEGER)
    assert shown is not None
    assert [e.reason for e in shown.events] == ["Pending", "Running"]


def test_queues_show_weight_share_allocation_against_capability_and_podgroups() -> None:
    store = store_of(
        build_node("n1"),
        build_queue("gpu", weight=3, capability={"cpu": 8000}),
        *running_job("default/a", queue="gpu", cpu=1000),
    )

    views = {q.name: q for q in queue_views(store)}

    assert (views["default"].weight, views["default"].share) == (1, 25)
    assert (views["gpu"].weight, views["gpu"].share) == (3, 75)
    assert views["gpu"].allocated[0].used == 2000
    assert views["gpu"].allocated[0].total == 8000
    assert views["gpu"].capability == "cpu=8"
    assert views["gpu"].podgroups == (("Running", 1),)


def test_overview_sums_cluster_use_and_counts_jobs_by_phase() -> None:
    store = store_of(
        build_node("n1"),
        build_node("n2"),
        *running_job("default/a", cpu=1000),
        *waiting_job("team/b"),
        locked("team/b", ("n2",), 1),
    )

    model = overview(store)

    assert model.resources[0].used == 2000
    assert model.resources[0].total == 8000
    assert model.phases == (("Pending", 1), ("Running", 1))
    assert model.locked == (("n2", "team/b"),)
    assert model.target == "team/b"


def test_pages_escape_user_data() -> None:
    evil = 'team/<b onclick="alert(1)">x\''
    store = store_of(
        build_node("n<1>"),
        *waiting_job(evil),
        locked(evil, ("n<1>",), 1),
    )
    detail = job_detail(store, evil, jaeger_url=JAEGER)
    assert detail is not None

    pages = [
        jobs_page(job_list(store, JobFilter())),
        job_page(detail),
        nodes_page(node_cells(store)),
        overview_page(overview(store)),
    ]

    for page in pages:
        assert "<b onclick" not in page
        assert "n<1>" not in page
    assert "team/&lt;b onclick=&quot;alert(1)&quot;&gt;x&#x27;" in pages[0]
    assert 'href="/jobs/team/%3Cb%20onclick%3D%22alert%281%29%22%3Ex%27"' in pages[0]
    assert "n&lt;1&gt;" in pages[2]


def test_pages_link_jobs_mark_locked_nodes_and_keep_the_chosen_filters() -> None:
    store = store_of(build_node("n1"), *waiting_job("team/b"), locked("team/b", ("n1",), 1))

    jobs = jobs_page(job_list(store, JobFilter(namespace="team")))
    nodes = nodes_page(node_cells(store))

    assert '<a class="job" href="/jobs/team/b">team/b</a>' in jobs
    assert '<option value="team" selected>team</option>' in jobs
    assert 'class="node level-0 locked" data-node="n1"' in nodes
    assert 'locked for <a href="/jobs/team/b">team/b</a>' in nodes


def test_podgroup_spec_is_shown_on_the_job_page() -> None:
    spec = build_podgroup("team/b")
    spec = PodGroupCreated(
        event_id="pg2",
        occurred_at=spec.occurred_at,
        podgroup=msgspec.structs.replace(spec.podgroup, min_task_member={"worker": 2}),
    )
    store = store_of(*waiting_job("team/b"), spec)

    detail = job_detail(store, "team/b", jaeger_url=JAEGER)

    assert detail is not None
    assert detail.podgroup is not None
    assert detail.podgroup.min_task_member == (("worker", 2),)
    assert "worker=2" in job_page(detail)

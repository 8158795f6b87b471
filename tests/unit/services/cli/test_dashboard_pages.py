"""The dashboard's units, job page, jobs list, deleted jobs, node legend and charts (no I/O)."""

from __future__ import annotations

import itertools
import re
from datetime import timedelta

import msgspec
import pytest

from tests.unit.services.cli.builders import (
    NOW,
    PREFIX,
    build_admitted,
    build_node,
    build_phase,
    build_podgroup,
    build_queue,
    build_status,
)
from tests.unit.services.cli.test_dashboard_views import running_job, waiting_job
from vcbus.contracts import Event, JobAdmitted, JobDeleted, JobKey
from vcbus.contracts.objects import PodGroupPhase
from vcbus.core.bus.outbox import event_record
from vcbus.core.bus.records import Record
from vcbus.services.cli.dashboard.job_detail import job_detail
from vcbus.services.cli.dashboard.pages import job_page, jobs_page, nodes_page, overview_page
from vcbus.services.cli.dashboard.samples import Samples, charts, sample_seconds, take_sample
from vcbus.services.cli.dashboard.store import DashboardStore, history_seconds
from vcbus.services.cli.dashboard.views import PAGE_SIZE, JobFilter, job_list, node_cells, overview

JAEGER = "http://jaeger.example:16686/"
_offsets = itertools.count()


def store_of(*events: Event, at: float = 60, **kept: float) -> DashboardStore:
    store = DashboardStore(PREFIX, now=lambda: NOW + timedelta(seconds=at), **kept)  # type: ignore[arg-type]
    for event in events:
        out = event_record(event, PREFIX)
        store.fold(Record(out.topic, 0, next(_offsets), out.key, out.value, out.headers))
    return store


def created(key: str, seconds: float) -> JobAdmitted:
    """An admission of ``key`` whose manifest was created ``seconds`` after NOW."""
    admitted = build_admitted(key)
    metadata = msgspec.structs.replace(
        admitted.manifest.metadata, creation_timestamp=NOW + timedelta(seconds=seconds)
    )
    manifest = msgspec.structs.replace(admitted.manifest, metadata=metadata)
    return msgspec.structs.replace(admitted, manifest=manifest)


def deleted(key: str, at: float) -> JobDeleted:
    return JobDeleted(
        event_id=f"{key}-del", occurred_at=NOW + timedelta(seconds=at), job=JobKey(key)
    )


def text(page: str) -> str:
    """A page's text, tags dropped."""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page))


def test_meters_say_cpu_in_cores_and_memory_in_gi() -> None:
    store = store_of(build_node("n1"), build_node("n2"), *running_job("default/a", cpu=1550))

    page = text(overview_page(overview(store)))

    assert "3.1 / 8 cores (39%)" in page
    assert "2Gi / 16Gi (12%)" in page
    assert not re.search(r"\d+m /", page)


def test_job_page_shows_describes_events_with_relative_times() -> None:
    store = store_of(*waiting_job("team/b"), at=75)
    detail = job_detail(store, "team/b", jaeger_url=JAEGER)
    assert detail is not None

    page = job_page(detail)
    events = text(page.split("<h2>Events</h2>")[1])

    assert "Admitted" in events
    assert "admitted to queue default" in events
    assert "NotEnoughResources" in events
    assert "75s ago" in events  # kubectl's ages: seconds up to two minutes
    assert '<time class="ago" datetime="2026-01-01T00:00:00+00:00">75s ago</time>' in page
    assert ".v1" not in events
    assert "Pending → Pending" not in page


def test_job_page_gives_queue_position_and_inadmissible() -> None:
    store = store_of(
        *waiting_job("team/a"),
        build_admitted("team/b"),
        build_podgroup("team/b"),
        build_status("team/b", "Pending"),
        build_phase("team/b", PodGroupPhase.PENDING, reason="Infeasible", message="cpu 99 > 8"),
    )
    detail = job_detail(store, "team/b", jaeger_url=JAEGER)
    assert detail is not None

    page = text(job_page(detail))

    assert detail.admission == "Inadmissible (Infeasible)"
    assert "Admission Inadmissible (Infeasible)" in page
    assert detail.place == "2 of 2 waiting in queue default"
    assert "Queue position 2 of 2 waiting in queue default" in page


def test_jobs_list_shows_age_and_sorts_by_any_column_both_ways() -> None:
    store = store_of(
        created("default/old", 0),
        build_status("default/old", "Running", running=2),
        created("default/new", 50),
        build_status("default/new", "Pending"),
        at=60,
    )

    by_name = job_list(store, JobFilter())
    by_age = job_list(store, JobFilter(sort="age"))
    by_age_desc = job_list(store, JobFilter(sort="age", descending=True))
    by_phase = job_list(store, JobFilter.of({"sort": "phase", "order": "desc"}))

    assert [r.key for r in by_name.rows] == ["default/new", "default/old"]
    assert [r.key for r in by_age.rows] == ["default/old", "default/new"]
    assert [r.key for r in by_age_desc.rows] == ["default/new", "default/old"]
    assert [r.phase for r in by_phase.rows] == ["Running", "Pending"]
    page = jobs_page(by_name)
    assert ">60s ago</time>" in page
    assert ">10s ago</time>" in page
    assert 'href="/jobs?sort=age&amp;order=desc"' in page  # age sorts the youngest first first
    assert "Job ▲" in text(page)


def test_jobs_search_matches_every_word_in_name_queue_phase_or_reason() -> None:
    store = store_of(*running_job("default/alpha"), *waiting_job("team/beta"))

    assert [r.key for r in job_list(store, JobFilter(search="BETA")).rows] == ["team/beta"]
    assert [r.key for r in job_list(store, JobFilter(search="notenough")).rows] == ["team/beta"]
    assert job_list(store, JobFilter(search="alpha pending")).rows == ()
    page = jobs_page(job_list(store, JobFilter(search="be<ta")))
    assert 'name="q" value="be&lt;ta"' in page


def test_jobs_are_shown_a_bounded_page_at_a_time() -> None:
    events = [build_status(f"default/j{i:03}", "Pending") for i in range(PAGE_SIZE * 2 + 5)]
    store = store_of(*events)

    first = job_list(store, JobFilter())
    last = job_list(store, JobFilter.of({"page": "3"}))
    beyond = job_list(store, JobFilter.of({"page": "99"}))
    bad = job_list(store, JobFilter.of({"page": "x", "sort": "<nonsense>"}))

    assert len(first.rows) == PAGE_SIZE
    assert (first.pages, first.matched) == (3, PAGE_SIZE * 2 + 5)
    assert [r.key for r in last.rows] == [f"default/j{i:03}" for i in range(100, 105)]
    assert beyond.filter.page == 3
    assert (bad.filter.page, bad.filter.sort) == (1, "name")
    page = text(jobs_page(first))
    assert "page 1 of 3" in page
    assert "next ›" in page
    assert "1–50 of 105 matching" in page


def test_a_deleted_job_keeps_a_page_with_its_last_state() -> None:
    store = store_of(*running_job("default/a"), deleted("default/a", 30), at=40)

    detail = job_detail(store, "default/a", jaeger_url=JAEGER)
    listing = job_list(store, JobFilter())

    assert detail is not None
    assert detail.deleted_at == NOW + timedelta(seconds=30)
    assert detail.row.phase == "Running"
    assert detail.tasks[0].counts.running == 2
    assert detail.events[-1].reason == "Deleted"
    page = text(job_page(detail, token="t"))
    assert "Deleted 10s ago" in page
    assert "Last phase Running" in page
    assert "Delete job" not in page
    assert listing.rows == ()
    assert listing.deleted == (("default/a", NOW + timedelta(seconds=30)),)
    assert "Deleted recently (1)" in text(jobs_page(listing))


def test_deleted_jobs_are_kept_for_the_time_set_and_a_bounded_count() -> None:
    events = [
        e for i in range(3) for e in (build_status(f"d/j{i}", "Running"), deleted(f"d/j{i}", i))
    ]
    counted = store_of(*events, at=3, deleted_jobs=2)
    timed = store_of(*events, at=100, keep_deleted=98.5)
    none_kept = store_of(*events, at=3, keep_deleted=0)

    assert list(counted.deleted) == ["d/j1", "d/j2"]  # j0 past the count
    assert job_detail(timed, "d/j1", jaeger_url=JAEGER) is None  # deleted 99 s ago, past 98.5 s
    assert job_detail(timed, "d/j2", jaeger_url=JAEGER) is not None
    assert job_detail(none_kept, "d/j2", jaeger_url=JAEGER) is None


def test_a_job_submitted_again_after_its_deletion_is_shown_live() -> None:
    store = store_of(
        *running_job("default/a"), deleted("default/a", 5), build_admitted("default/a")
    )
    assert "default/a" not in store.deleted


@pytest.mark.parametrize(
    ("value", "seconds"), [("", 3600.0), ("0", 0.0), ("90", 90.0), (" 1.5 ", 1.5)]
)
def test_history_seconds_come_from_the_environment(value: str, seconds: float) -> None:
    assert history_seconds({"VCBUS_DASHBOARD_HISTORY_SECONDS": value}) == seconds


@pytest.mark.parametrize("value", ["-1", "soon", "nan", "inf"])
def test_a_bad_history_setting_is_refused_with_its_name(value: str) -> None:
    with pytest.raises(ValueError, match="VCBUS_DASHBOARD_HISTORY_SECONDS"):
        history_seconds({"VCBUS_DASHBOARD_HISTORY_SECONDS": value})
    with pytest.raises(ValueError, match="VCBUS_DASHBOARD_SAMPLE_SECONDS"):
        sample_seconds({"VCBUS_DASHBOARD_SAMPLE_SECONDS": value})


def test_nodes_page_has_a_legend_of_its_colours() -> None:
    page = nodes_page(node_cells(store_of(build_node("n1"))))
    legend = text(page.split('class="legend node-legend"')[1].split("</ul>")[0])
    assert "idle" in legend
    assert "over 75 %" in legend
    assert "locked for a job" in legend


def test_samples_measure_use_queue_shares_and_pending_reasons() -> None:
    store = store_of(
        build_node("n1"),
        build_node("n2"),
        build_queue("gpu", weight=3),
        *running_job("default/a", queue="gpu", cpu=2000),
        *waiting_job("team/b"),
        *waiting_job("team/c"),
    )

    sample = take_sample(store, NOW)

    assert sample.utilisation["cpu"] == 0.5
    assert sample.utilisation["memory"] == pytest.approx(2 / 16)
    assert sample.shares["gpu"] == (0.5, 0.75)
    assert sample.shares["default"] == (0.0, 0.25)
    assert sample.pending == {"NotEnoughResources": 2}


def test_the_sample_ring_is_bounded_and_charted_over_time() -> None:
    store = store_of(build_node("n1"), *running_job("default/a", cpu=1000))
    ring = Samples(size=3)
    for i in range(5):
        ring.add(take_sample(store, NOW + timedelta(seconds=5 * i)))

    drawn = charts(ring.ring, NOW + timedelta(seconds=20))

    assert len(ring.ring) == 3
    assert [c.split('data-chart="')[1].split('"')[0] for c in drawn] == [
        "Cluster utilisation",
        "Queue share against deserved share (dashed)",
        "Pending jobs by reason",
    ]
    cpu = re.search(r'data-series="cpu" data-points="([^"]+)"', drawn[0])
    assert cpu is not None
    assert cpu.group(1) == "-10,0.5 -5,0.5 0,0.5"
    assert 'data-series="default deserved"' in drawn[1]
    assert "10s ago" in drawn[0]
    assert "no samples yet" in charts([], NOW)[0]

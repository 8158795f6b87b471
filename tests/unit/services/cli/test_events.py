"""A job's events for ``describe job``: read from its records, newest last, with ages."""

from __future__ import annotations

from datetime import timedelta

import msgspec
import pytest

from tests.unit.services.cli.builders import (
    NOW,
    SETTINGS,
    build_admitted,
    build_allocator_condition,
    build_phase,
    build_pod,
    build_podgroup,
    build_status,
    locked,
    pod_created,
    pod_phase,
    publish,
)
from vcbus.contracts import Event, JobDeleted, JobKey, Topic
from vcbus.contracts.objects import PodGroupPhase
from vcbus.core.bus.memory import InMemoryBus
from vcbus.core.views.age import human_duration
from vcbus.core.views.events import MAX_EVENTS, job_events
from vcbus.services.cli.describe import describe

KEY = "default/big"


def at(event: Event, seconds: int) -> Event:
    return msgspec.structs.replace(event, occurred_at=NOW + timedelta(seconds=seconds))


def life(key: str = KEY) -> list[tuple[Topic, Event]]:
    """A gang admitted, enqueued, its two pods created and bound on one node, Running."""
    pods = [build_pod(key, 0), build_pod(key, 1)]
    return [
        (Topic.JOBS_ADMITTED, at(build_admitted(key), 0)),
        (Topic.JOBS_STATUS, build_status(key, "Pending", at=1)),
        (Topic.PODGROUPS, at(build_podgroup(key), 1)),
        (Topic.PODGROUPS_STATUS, at(build_phase(key, PodGroupPhase.INQUEUE), 2)),
        *((Topic.PODS, at(pod_created(p), 3)) for p in pods),
        *((Topic.PODS_STATUS, at(pod_phase(p, "Pending", "node-0"), 4)) for p in pods),
        (Topic.JOBS_STATUS, build_status(key, "Running", at=5, running=2)),
    ]


def test_each_step_of_a_life_is_one_row_with_equal_neighbours_counted():
    rows = job_events(KEY, life())
    assert [(r.reason, r.source, r.message, r.count) for r in rows] == [
        ("Admitted", "admission", "admitted to queue default", 1),
        ("Pending", "job-controller", "job is Pending", 1),
        ("PodGroupCreated", "job-controller", "PodGroup big-pg, minMember 2", 1),
        ("Enqueued", "podgroup-enqueue", "PodGroup Inqueue", 1),
        ("Created", "job-controller", "created pods of task worker", 2),
        ("Bound", "cluster", "pods of task worker bound to node-0", 2),
        ("Running", "job-controller", "job is Running", 1),
    ]


def test_reasons_locks_and_retries_make_rows_when_they_change_and_other_jobs_none():
    records = [
        (
            Topic.PODGROUPS_CONDITIONS,
            at(build_allocator_condition(KEY, "GangUnschedulable", "0/2"), 1),
        ),
        (
            Topic.PODGROUPS_CONDITIONS,
            at(build_allocator_condition(KEY, "GangUnschedulable", "0/2"), 2),
        ),
        (Topic.RESERVATIONS, at(locked(KEY, ("node-1",), 1), 3)),
        (Topic.RESERVATIONS, at(locked("default/other", ("node-0",), 1), 3)),
        (
            Topic.JOBS_STATUS,
            msgspec.structs.replace(build_status(KEY, "Running", at=4), retry_count=1),
        ),
    ]
    rows = job_events(KEY, records)
    assert [(r.type, r.reason, r.message) for r in rows] == [
        ("Warning", "GangUnschedulable", "0/2"),
        ("Normal", "NodesLocked", "nodes node-1 locked for this job"),
        ("Warning", "Restarted", "retry 1"),
        ("Normal", "Running", "job is Running"),
    ]


def test_only_the_newest_life_of_a_job_name_is_shown():
    gone = JobDeleted(event_id="gone", occurred_at=NOW + timedelta(seconds=6), job=JobKey(KEY))
    again = [(t, at(e, 10 + int((e.occurred_at - NOW).total_seconds()))) for t, e in life()]
    rows = job_events(KEY, [*life(), (Topic.JOBS_STATUS, gone), *again])
    assert rows[0].reason == "Admitted"
    assert rows[0].at == NOW + timedelta(seconds=10)
    assert "Deleted" not in [r.reason for r in rows]


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (-5, "<invalid>"),
        (0, "0s"),
        (119, "119s"),
        (125, "2m5s"),
        (600, "10m"),
        (3 * 3600 + 60, "3h1m"),
        (30 * 3600, "30h"),
        (3 * 86400 + 3600, "3d1h"),
        (400 * 86400, "400d"),
        (3 * 365 * 86400, "3y"),
    ],
)
def test_ages_are_written_as_kubectl_writes_them(seconds, text):
    assert human_duration(seconds) == text


async def test_describe_ends_with_the_events_newest_last_with_ages_and_counts():
    bus = InMemoryBus()
    await publish(bus, *(event for _, event in life()))
    text = await describe(bus, SETTINGS, KEY, now=NOW + timedelta(seconds=65))
    assert text is not None
    lines = text.splitlines()
    events = lines[lines.index("Events:") + 1 :]
    assert events[0].split() == ["TYPE", "REASON", "AGE", "FROM", "MESSAGE"]
    assert events[1].split()[:4] == ["Normal", "Admitted", "65s", "admission"]
    assert events[5].split()[:7] == [
        "Normal",
        "Created",
        "62s",
        "(x2",
        "over",
        "62s)",
        "job-controller",
    ]
    assert events[-1].split() == [
        "Normal",
        "Running",
        "60s",
        "job-controller",
        "job",
        "is",
        "Running",
    ]


async def test_describe_shows_the_newest_events_only_and_counts_the_others():
    bus = InMemoryBus()
    statuses = [
        build_status(KEY, ("Pending", "Running")[i % 2], at=i) for i in range(MAX_EVENTS + 3)
    ]
    await publish(bus, build_admitted(KEY), *statuses)
    text = await describe(bus, SETTINGS, KEY, now=NOW + timedelta(seconds=100))
    assert text is not None
    assert "  (4 older events not shown)" in text.splitlines()

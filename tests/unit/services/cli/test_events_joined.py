"""A job's events and failures from joined records (several events in one record), and a
job deleted and submitted again that starts with its own events."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import msgspec

from tests.unit.services.cli.builders import (
    NOW,
    PREFIX,
    SETTINGS,
    build_admitted,
    build_pod,
    build_status,
    pod_created,
    pod_phase,
)
from vcbus.contracts import Event, JobDeleted, JobKey, PodDeleted, PodKey, Topic
from vcbus.core.bus.batch import join
from vcbus.core.bus.memory import InMemoryBus
from vcbus.core.bus.outbox import event_record
from vcbus.core.views.events import job_events
from vcbus.services.cli.describe import describe

KEY = "default/gang"


async def publish_joined(bus: InMemoryBus, *events: Event) -> None:
    """Publish as the services do: the events about one key, of one type, in one record."""
    out = [event_record(e, PREFIX) for e in events]
    untraced = [  # one decision's events share its trace; these carry none
        dataclasses.replace(r, headers=tuple(h for h in r.headers if h[0] != "traceparent"))
        for r in out
    ]
    await bus.producer(client_id="test").send(join(untraced))


async def test_each_pod_of_a_joined_record_makes_its_row_and_its_failure():
    bus = InMemoryBus()
    pods = [build_pod(KEY, index) for index in range(4)]
    bound = [pod_phase(pod, "Pending", f"node-{pod.index}") for pod in pods]
    failed = [
        msgspec.structs.replace(pod_phase(pod, "Failed", f"node-{pod.index}"), exit_code=1)
        for pod in pods[:2]
    ]
    await publish_joined(bus, build_admitted(KEY))
    await publish_joined(bus, *(pod_created(pod) for pod in pods))
    await publish_joined(bus, *bound)
    await publish_joined(bus, *failed)
    await publish_joined(bus, build_status(KEY, "Running", at=1))
    assert len(bus.records(f"{PREFIX}{Topic.PODS_STATUS}")) == 2  # joined: 2 records of 6

    text = await describe(bus, SETTINGS, KEY, now=NOW)

    assert text is not None
    bound_rows = [line.split()[-1] for line in text.splitlines() if "  Bound  " in line]
    assert bound_rows == ["node-0", "node-1", "node-2", "node-3"]
    assert "created pods of task worker" in text
    assert "(x4 over" in text
    failed_pods = text.split("Failed Pods:")[1].splitlines()[2:4]
    assert [row.split()[0] for row in failed_pods] == ["gang-worker-0", "gang-worker-1"]


def test_a_job_submitted_again_shows_none_of_the_deleted_ones_last_step():
    pod = build_pod(KEY, 0)
    gone_at = NOW + timedelta(seconds=5)
    killed = PodDeleted(
        event_id="k", occurred_at=gone_at, job=JobKey(KEY), pod=PodKey(f"default/{pod.name}")
    )
    deleted = JobDeleted(event_id="d", occurred_at=gone_at, job=JobKey(KEY))
    again = msgspec.structs.replace(
        build_admitted(KEY), event_id="a2", occurred_at=gone_at + timedelta(seconds=1)
    )
    records: list[tuple[Topic, Event]] = [
        (Topic.JOBS_ADMITTED, build_admitted(KEY)),
        (Topic.JOBS_ADMITTED, again),
        (Topic.JOBS_STATUS, deleted),
        (Topic.PODS, pod_created(pod)),
        (Topic.PODS, killed),  # read after the deletion, at its time: the same step
    ]
    rows = job_events(KEY, records)
    assert [row.reason for row in rows] == ["Admitted"]
    assert rows[0].at == again.occurred_at

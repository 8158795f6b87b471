"""ServiceMetrics and the Prometheus text: what the runtime feeds, what a scrape shows."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest

from vcbus.contracts import (
    BindingCreated,
    JobAdmitted,
    JobKey,
    NodeName,
    PodGroupCreated,
    PodGroupDeleted,
    PodGroupPhaseChanged,
)
from vcbus.contracts.objects import Condition, Job, Pod, PodGroup, PodGroupPhase
from vcbus.core.bus.dead_letter import dead_letter
from vcbus.core.bus.memory import InMemoryBus
from vcbus.core.bus.outbox import event_record
from vcbus.core.bus.records import OutRecord, Record, TopicConfig
from vcbus.core.telemetry import PendingPodGroups, ServiceMetrics, prometheus_name

PREFIX = "t."
NOW = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
def metrics():
    made = ServiceMetrics("job-controller", instance="1", prefix=PREFIX)
    yield made
    made.close()


def sample(text: str, name: str, **labels: str) -> float | None:
    """The value of one sample in Prometheus text, or None."""
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        match = re.fullmatch(r"([a-zA-Z_:][\w:]*)(\{.*\})? (\S+)", line)
        if match is None or match.group(1) != name:
            continue
        found = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', match.group(2) or ""))
        if found == labels:
            return float(match.group(3))
    return None


def received(event, offset: int = 0, partition: int = 0) -> Record:
    out = event_record(event, PREFIX)
    return Record(out.topic, partition, offset, out.key, out.value, out.headers)


def phase_changed(
    job: str, phase: PodGroupPhase, at: datetime, reason: str = ""
) -> PodGroupPhaseChanged:
    conditions = (Condition(type="Unschedulable", reason=reason, message="m"),) if reason else ()
    return PodGroupPhaseChanged(
        event_id=f"{job}-{phase}",
        occurred_at=at,
        job=JobKey(job),
        podgroup="pg",
        phase=phase,
        conditions=conditions,
    )


def test_names_follow_otel_prometheus_rules_when_units_and_counters_given():
    assert (
        prometheus_name("vcbus.cycle.duration", "s", counter=False)
        == "vcbus_cycle_duration_seconds"
    )
    assert prometheus_name("vcbus.bindings", "", counter=True) == "vcbus_bindings_total"
    assert prometheus_name("vcbus.consumer.lag", "{record}", counter=False) == "vcbus_consumer_lag"


def test_every_family_is_listed_when_nothing_was_measured(metrics):
    text = metrics.render()
    for name in (
        "vcbus_cycle_duration_seconds",
        "vcbus_bindings_total",
        "vcbus_podgroups_pending",
        "vcbus_consumer_lag",
        "vcbus_records_dead_lettered_total",
        "vcbus_job_submit_to_gang_ready_seconds",
    ):
        assert f"# TYPE {name} " in text
    assert sample(text, "vcbus_bindings_total") == 0
    assert sample(text, "target_info", service_name="job-controller", service_instance_id="1") == 1


def test_cycle_histogram_is_cumulative_when_cycles_were_observed(metrics):
    metrics.observe_cycle(0.002)
    metrics.observe_cycle(0.3)
    text = metrics.render()
    assert sample(text, "vcbus_cycle_duration_seconds_bucket", le="0.001") == 0
    assert sample(text, "vcbus_cycle_duration_seconds_bucket", le="0.0025") == 1
    assert sample(text, "vcbus_cycle_duration_seconds_bucket", le="0.5") == 2
    assert sample(text, "vcbus_cycle_duration_seconds_bucket", le="+Inf") == 2
    assert sample(text, "vcbus_cycle_duration_seconds_count") == 2
    assert sample(text, "vcbus_cycle_duration_seconds_sum") == pytest.approx(0.302)


def test_bindings_and_dead_letters_are_counted_when_published(metrics):
    pod = Pod(
        name="j-w-0", namespace="default", job=JobKey("default/j"), task="w", index=0, podgroup="pg"
    )
    binding = BindingCreated(event_id="b", occurred_at=NOW, pod=pod, node=NodeName("n1"))
    poison = Record(f"{PREFIX}podgroups.status", 1, 7, b"k", b"{", ())
    letter = dead_letter(poison, "bad json", service="job-controller")
    metrics.observe_published(
        [event_record(binding, PREFIX), event_record(binding, PREFIX), letter]
    )
    text = metrics.render()
    assert sample(text, "vcbus_bindings_total") == 2
    assert sample(text, "vcbus_records_dead_lettered_total", topic="podgroups.status") == 1


def test_latency_runs_from_admission_to_running_podgroup_when_both_are_consumed(metrics):
    admitted = JobAdmitted(
        event_id="a", occurred_at=NOW, job=JobKey("default/j"), manifest=Job(), spec_digest="d"
    )
    running = phase_changed("default/j", PodGroupPhase.RUNNING, NOW + timedelta(seconds=3))
    metrics.observe_polled([received(admitted, 0)])
    metrics.observe_polled([received(phase_changed("default/j", PodGroupPhase.INQUEUE, NOW), 1)])
    metrics.observe_polled([received(running, 2), received(running, 3)])
    text = metrics.render()
    assert sample(text, "vcbus_job_submit_to_gang_ready_seconds_count") == 1
    assert sample(text, "vcbus_job_submit_to_gang_ready_seconds_sum") == pytest.approx(3.0)
    assert sample(text, "vcbus_records_consumed_total", topic="podgroups.status") == 3


def test_pending_gauge_counts_pending_and_inqueue_by_reason_when_active(metrics):
    pending = PendingPodGroups()
    for job in ("a/1", "a/2", "a/3", "a/4"):
        group = PodGroup(name="pg", namespace="a", job=JobKey(job))
        pending.apply(PodGroupCreated(event_id=job, occurred_at=NOW, podgroup=group))
    pending.apply(phase_changed("a/1", PodGroupPhase.PENDING, NOW, "ClusterOverused"))
    pending.apply(phase_changed("a/2", PodGroupPhase.PENDING, NOW, "ClusterOverused"))
    pending.apply(phase_changed("a/3", PodGroupPhase.RUNNING, NOW))
    pending.apply(PodGroupDeleted(event_id="d", occurred_at=NOW, job=JobKey("a/4"), name="pg"))
    metrics.pending = pending
    text = metrics.render()
    assert sample(text, "vcbus_podgroups_pending", phase="Pending", reason="ClusterOverused") == 2
    assert sample(text, "vcbus_podgroups_pending", phase="Running", reason="none") is None
    metrics.is_active = lambda: False
    assert (
        sample(
            metrics.render(), "vcbus_podgroups_pending", phase="Pending", reason="ClusterOverused"
        )
        is None
    )


async def test_lag_is_end_minus_next_offset_when_a_scrape_measures_it(metrics):
    bus = InMemoryBus()
    topic = f"{PREFIX}jobs.admitted"
    await bus.ensure_topics([TopicConfig(topic, 2)])
    producer = bus.producer(client_id="p")
    await producer.send([OutRecord(topic, None, b"x", (), 0) for _ in range(5)])
    consumer = bus.consumer([topic], group="g", client_id="c")
    await consumer.start()
    try:
        metrics.attach(consumer)
        first = await consumer.getmany(timeout=0.1, max_records=2)
        metrics.observe_polled(first, consumer.assignment())
        metrics.observe_polled([], consumer.assignment())
        text = await metrics.collect()
    finally:
        await consumer.stop()
    assert sample(text, "vcbus_consumer_lag", topic="jobs.admitted", partition="0") == 3
    assert sample(text, "vcbus_consumer_lag", topic="jobs.admitted", partition="1") == 0
    metrics.attach(None)
    await metrics.refresh_lag()
    assert (
        sample(metrics.render(), "vcbus_consumer_lag", topic="jobs.admitted", partition="0") is None
    )

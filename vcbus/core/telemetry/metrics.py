"""ServiceMetrics: a service's OpenTelemetry instruments, fed by the runtime, read as Prometheus.

Each service has its own ``MeterProvider`` (never the global one, so several services can
run in one process, as the tests do) with an in-memory reader; a scrape collects it and
renders the text format (``vcbus.core.telemetry.exposition``). The runtime feeds it from the
records it consumes and publishes, so no handler records a metric:

- ``vcbus_cycle_duration_seconds``: every scheduling cycle (podgroup-enqueue, allocator).
- ``vcbus_bindings_total``: ``BindingCreated`` published (allocator).
- ``vcbus_podgroups_pending{phase,reason}``: a view of ``podgroups`` and
  ``podgroups.status``, kept by their writer (podgroup-enqueue); only the active replica
  reports it, so a sum over replicas is right.
- ``vcbus_consumer_lag{topic,partition}``: end offsets minus the next offset to handle,
  measured at scrape time (services consuming in a group).
- ``vcbus_records_consumed_total{topic}``: records handled (services consuming in a group).
- ``vcbus_records_dead_lettered_total{topic}``: records sent to a ``.DLT`` topic (any).
- ``vcbus_job_submit_to_gang_ready_seconds``: ``JobAdmitted`` then
  ``PodGroupPhaseChanged(Running)`` consumed (job-controller).

The latency runs from admission (``JobAdmitted.occurred_at``, milliseconds after the
submission) to the moment podgroup-enqueue saw the gang placed (the PodGroup's phase
``Running``), both event times, so the consumer's own delay does not count.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Final, Protocol

import msgspec
from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.resources import SERVICE_INSTANCE_ID, SERVICE_NAME, Resource

from vcbus.contracts import (
    BindingCreated,
    Event,
    JobAdmitted,
    PodGroupCreated,
    PodGroupDeleted,
    PodGroupPhaseChanged,
    PodGroupUpdated,
    tag_of,
)
from vcbus.contracts.objects import PodGroupPhase
from vcbus.contracts.topics import DLT_SUFFIX
from vcbus.core.bus.batch import events_in
from vcbus.core.bus.envelope import HEADER_DLT_TOPIC, HEADER_EVENT_TYPE
from vcbus.core.bus.protocol import Consumer
from vcbus.core.bus.records import OutRecord, Record, TopicPartition
from vcbus.core.reasons import UNSCHEDULABLE
from vcbus.core.telemetry.exposition import Family, render
from vcbus.core.views.jobs import JobFold

CYCLE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
"""Seconds: a cycle takes from well under a millisecond to seconds on 10,000 jobs."""

LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0)
"""Seconds from submission to a placed gang: sub-second on an idle cluster, hours in a queue."""

LAG_TIMEOUT = 2.0
"""How long a scrape waits for end offsets before showing the last lag measured."""

MAX_TRACKED_JOBS = 100_000
"""Admitted jobs remembered while waiting for their gang; the oldest are forgotten beyond."""

_AT_END = -1
"""Position of a partition that had nothing to read at the last empty poll."""

PENDING_PHASES = frozenset({PodGroupPhase.PENDING, PodGroupPhase.INQUEUE})

FAMILIES = (
    Family("vcbus.cycle.duration", "histogram", "Duration of one scheduling cycle.", "s"),
    Family("vcbus.bindings", "counter", "Pods bound to nodes (BindingCreated published)."),
    Family(
        "vcbus.podgroups.pending",
        "gauge",
        "PodGroups not yet running (Pending or Inqueue), by phase and reason code.",
    ),
    Family("vcbus.consumer.lag", "gauge", "Records of an assigned partition not yet handled."),
    Family("vcbus.records.consumed", "counter", "Records handled, by topic."),
    Family(
        "vcbus.records.dead_lettered",
        "counter",
        "Records sent to a dead-letter topic, by original topic.",
    ),
    Family(
        "vcbus.job.submit_to_gang_ready",
        "histogram",
        "Seconds from a job's admission to its PodGroup running (gang placed).",
        "s",
    ),
)


class _AdmittedPeek(msgspec.Struct):
    job_key: str
    occurred_at: datetime


class _PhasePeek(msgspec.Struct):
    job: str
    phase: str
    occurred_at: datetime


def _tag(event_type: type[Event]) -> bytes:
    return tag_of(event_type).encode()


_ADMITTED = _tag(JobAdmitted)
_PHASE_CHANGED = _tag(PodGroupPhaseChanged)
_BINDING = _tag(BindingCreated)


class PendingPodGroups:
    """Phase and reason code of every PodGroup, from ``podgroups`` and ``podgroups.status``.

    The jobs are the read model's fold (:class:`~vcbus.core.views.jobs.JobFold`), so the gauge
    counts what ``get podgroups`` shows: a PodGroup is pending while its phase is
    ``Pending`` or ``Inqueue``; its reason is the code of its ``Unschedulable`` condition
    (``none`` without one). A deleted PodGroup is ``Deleted``, never pending.
    """

    def __init__(self) -> None:
        self._jobs = JobFold()

    def apply(self, event: Event, record: Record | None = None) -> None:
        """Fold one event of ``podgroups`` or ``podgroups.status``; others are ignored."""
        if isinstance(event, _PODGROUP_EVENTS):
            self._jobs.apply(event)

    def counts(self) -> dict[tuple[str, str], int]:
        """Pending PodGroups by ``(phase, reason)``."""
        out: dict[tuple[str, str], int] = {}
        for view in self._jobs.jobs.values():
            phase = view.podgroup_phase
            if phase not in PENDING_PHASES:
                continue
            reason = next(
                (
                    c.reason
                    for c in view.podgroup_conditions
                    if c.type == UNSCHEDULABLE and c.reason
                ),
                "none",
            )
            out[(phase, reason)] = out.get((phase, reason), 0) + 1
        return out


_PODGROUP_EVENTS = (PodGroupCreated, PodGroupUpdated, PodGroupDeleted, PodGroupPhaseChanged)


class RuntimeMetrics(Protocol):
    """What the runtime feeds while a service runs: :class:`ServiceMetrics` or ``NO_METRICS``."""

    def observe_cycle(self, seconds: float) -> None:
        """Record one scheduling cycle's duration."""

    def observe_polled(
        self, records: Sequence[Record], assignment: Iterable[TopicPartition] = ()
    ) -> None:
        """Note a poll's records (to be handled now)."""

    def observe_published(self, records: Sequence[OutRecord]) -> None:
        """Note records about to be published."""

    def attach(self, consumer: Consumer | None) -> None:
        """The group consumer whose lag a scrape measures (``None`` when it stopped)."""


class NullMetrics:
    """Metrics that keep nothing: a service run without a metrics endpoint (tests, simulate)."""

    def observe_cycle(self, seconds: float) -> None:
        """Keep nothing."""

    def observe_polled(
        self, records: Sequence[Record], assignment: Iterable[TopicPartition] = ()
    ) -> None:
        """Keep nothing."""

    def observe_published(self, records: Sequence[OutRecord]) -> None:
        """Keep nothing."""

    def attach(self, consumer: Consumer | None) -> None:
        """Keep nothing."""


NO_METRICS: Final[RuntimeMetrics] = NullMetrics()


class ServiceMetrics:
    """The instruments of one service and what feeds them."""

    def __init__(self, service: str, *, instance: str = "0", prefix: str = "") -> None:
        self.service = service
        self.prefix = prefix
        self.pending: PendingPodGroups | None = None
        """Set to a fold to report pending PodGroups (the writer of ``podgroups.status``)."""
        self.is_active: Callable[[], bool] = lambda: True
        """Whether this replica reports the pending gauge (a standby does not, so sums add up)."""
        self._reader = InMemoryMetricReader()
        self._provider = MeterProvider(
            metric_readers=[self._reader],
            resource=Resource({SERVICE_NAME: service, SERVICE_INSTANCE_ID: instance}),
            shutdown_on_exit=False,
        )
        meter = self._provider.get_meter("vcbus")
        helps = {family.name: family.help for family in FAMILIES}
        self._cycle = meter.create_histogram(
            "vcbus.cycle.duration",
            unit="s",
            description=helps["vcbus.cycle.duration"],
            explicit_bucket_boundaries_advisory=CYCLE_BUCKETS,
        )
        self._bindings = meter.create_counter("vcbus.bindings", description=helps["vcbus.bindings"])
        self._bindings.add(0)
        meter.create_observable_gauge(
            "vcbus.podgroups.pending",
            [self._observe_pending],
            description=helps["vcbus.podgroups.pending"],
        )
        meter.create_observable_gauge(
            "vcbus.consumer.lag", [self._observe_lag], description=helps["vcbus.consumer.lag"]
        )
        self._consumed = meter.create_counter(
            "vcbus.records.consumed", description=helps["vcbus.records.consumed"]
        )
        self._dead_lettered = meter.create_counter(
            "vcbus.records.dead_lettered", description=helps["vcbus.records.dead_lettered"]
        )
        self._latency = meter.create_histogram(
            "vcbus.job.submit_to_gang_ready",
            unit="s",
            description=helps["vcbus.job.submit_to_gang_ready"],
            explicit_bucket_boundaries_advisory=LATENCY_BUCKETS,
        )
        self._admitted_peek = msgspec.json.Decoder(_AdmittedPeek | list[_AdmittedPeek])
        self._phase_peek = msgspec.json.Decoder(_PhasePeek | list[_PhasePeek])
        self._admitted: dict[str, datetime] = {}
        self._positions: dict[TopicPartition, int] = {}
        self._lag: dict[TopicPartition, int] = {}
        self._consumer: Consumer | None = None

    # -- fed by the runtime -----------------------------------------------------------------

    def observe_cycle(self, seconds: float) -> None:
        """Record one scheduling cycle's duration."""
        self._cycle.record(seconds)

    def observe_polled(
        self, records: Sequence[Record], assignment: Iterable[TopicPartition] = ()
    ) -> None:
        """Note a poll's records (to be handled now); an empty poll means nothing is waiting.

        Args:
            records: the records the poll returned.
            assignment: the partitions assigned at the poll.
        """
        if not records:
            for tp in assignment:
                self._positions.setdefault(tp, _AT_END)
            return
        counts: dict[str, int] = {}
        for record in records:
            self._positions[record.tp] = record.offset + 1
            counts[record.topic] = counts.get(record.topic, 0) + 1
            event_type = record.header(HEADER_EVENT_TYPE)
            if event_type == _ADMITTED:
                self._note_admitted(record)
            elif event_type == _PHASE_CHANGED:
                self._note_phase(record)
        for topic, count in counts.items():
            self._consumed.add(count, {"topic": self._short(topic)})

    def observe_published(self, records: Sequence[OutRecord]) -> None:
        """Count bindings and dead letters among records about to be published."""
        bindings = 0
        for record in records:
            if record.topic.endswith(DLT_SUFFIX):
                original = dict(record.headers).get(HEADER_DLT_TOPIC)
                topic = original.decode() if original else record.topic[: -len(DLT_SUFFIX)]
                self._dead_lettered.add(1, {"topic": self._short(topic)})
            elif dict(record.headers).get(HEADER_EVENT_TYPE) == _BINDING:
                bindings += events_in(record)
        if bindings:
            self._bindings.add(bindings)

    def forget(self, partitions: Iterable[TopicPartition]) -> None:
        """Drop the positions and lag of revoked partitions."""
        for tp in partitions:
            self._positions.pop(tp, None)
            self._lag.pop(tp, None)

    def attach(self, consumer: Consumer | None) -> None:
        """The group consumer whose lag a scrape measures (``None`` when it stopped)."""
        self._consumer = consumer

    # -- read by a scrape -------------------------------------------------------------------

    async def refresh_lag(self) -> None:
        """Measure the lag of the assigned partitions whose position is known."""
        consumer = self._consumer
        if consumer is None:
            self._lag = {}
            return
        assigned = sorted(consumer.assignment())
        for gone in set(self._positions) - set(assigned):
            del self._positions[gone]
        ends = await consumer.end_offsets(assigned) if assigned else {}
        lag: dict[TopicPartition, int] = {}
        for tp in assigned:
            position = self._positions.get(tp)
            if position is None or tp not in ends:
                continue
            lag[tp] = 0 if position == _AT_END else max(0, ends[tp] - position)
        self._lag = lag

    async def collect(self) -> str:
        """Refresh the lag (bounded wait), then render every family as Prometheus text."""
        try:
            async with asyncio.timeout(LAG_TIMEOUT):
                await self.refresh_lag()
        except Exception:  # noqa: BLE001 - a slow or stopping broker must not fail a scrape
            pass
        return self.render()

    def render(self) -> str:
        """Every family as Prometheus text, with the values collected now."""
        return render(self._reader.get_metrics_data(), FAMILIES)

    def close(self) -> None:
        """Shut the meter provider down."""
        with contextlib.suppress(Exception):
            self._provider.shutdown()

    # -- internals --------------------------------------------------------------------------

    def _short(self, topic: str) -> str:
        return topic.removeprefix(self.prefix) if self.prefix else topic

    def _note_admitted(self, record: Record) -> None:
        try:
            peeked = self._admitted_peek.decode(record.value or b"")
        except msgspec.MsgspecError:
            return
        for peek in peeked if isinstance(peeked, list) else (peeked,):
            self._admitted.pop(peek.job_key, None)
            self._admitted[peek.job_key] = peek.occurred_at
        while len(self._admitted) > MAX_TRACKED_JOBS:
            self._admitted.pop(next(iter(self._admitted)))

    def _note_phase(self, record: Record) -> None:
        try:
            peeked = self._phase_peek.decode(record.value or b"")
        except msgspec.MsgspecError:
            return
        for peek in peeked if isinstance(peeked, list) else (peeked,):
            if peek.phase != PodGroupPhase.RUNNING:
                continue
            admitted = self._admitted.pop(peek.job, None)
            if admitted is not None:
                seconds = (peek.occurred_at - admitted).total_seconds()
                self._latency.record(max(0.0, seconds))

    def _observe_pending(self, options: CallbackOptions) -> Iterable[Observation]:
        if self.pending is None or not self.is_active():
            return []
        return [
            Observation(count, {"phase": phase, "reason": reason})
            for (phase, reason), count in sorted(self.pending.counts().items())
        ]

    def _observe_lag(self, options: CallbackOptions) -> Iterable[Observation]:
        return [
            Observation(lag, {"topic": self._short(tp.topic), "partition": str(tp.partition)})
            for tp, lag in sorted(self._lag.items())
        ]

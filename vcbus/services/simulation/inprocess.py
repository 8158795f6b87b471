"""Every service of a system in one process, fed a scenario's timed inputs, its outcome folded.

``run_system`` starts the services it is given on one bus, publishes the inputs at their
times, stops when the system has settled (or at a given time), and returns the outcome
folded from everything the services published, in the order they published it. The
composition root (``vcbus simulate``) builds the services and the inputs; this module knows
only contracts and the runtime.

Two pacers move time:

- :class:`VirtualPacer`: an ``InMemoryBus`` and a ``VirtualClock`` given to the bus and to
  every service. Each step lets the services run until nothing is runnable (every consumer
  waits with nothing to read, and no record or clock wait was added for a while), then
  advances the clock to the earliest waiter. One event loop, no real sleeping, so the same
  inputs give the same outcome, byte for byte. Idle waits (a poll that found nothing, a
  cycle on its timer with nothing time-based due) are skipped, by whole periods, up to the
  next input, service timer, end of the run or other wait (``VirtualClock.skip_idle``):
  a run costs by events, not by virtual seconds.
- :class:`RealPacer`: any bus (Kafka) and a real clock, possibly sped up
  (:class:`ScaledClock`); it sleeps until the next input and checks for settling.

"Settled" (``until: settled``) means: every input applied, no service timer pending (pods
still running toward a set end, policy timeouts), and nothing published for ``quiet``
seconds, or for ``grace`` seconds once every submitted job is rejected or in a final phase.
A run that settles with jobs unfinished stops as ``stalled``: nothing is left to happen.

A pod phase request (``PodPhaseSetRequested``) is not on a topic's union: it is handed to
the handler of the service that consumes ``cluster.commands``, keyed by the node that holds
the pod, and what that handler emits is published.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import structlog

from vcbus.contracts import Event, Topic
from vcbus.contracts.events.cluster_commands import PodPhaseSetRequested
from vcbus.contracts.topics import DLT_SUFFIX, TOPIC_SPECS
from vcbus.core.bus.codec import TopicCodec
from vcbus.core.bus.envelope import HEADER_DLT_SERVICE, Envelope
from vcbus.core.bus.memory import InMemoryBus
from vcbus.core.bus.outbox import Outbox
from vcbus.core.bus.partitioner import partition_for
from vcbus.core.bus.protocol import Bus, Consumer, Producer, RebalanceCallback
from vcbus.core.bus.records import OutRecord, TopicConfig, TopicPartition
from vcbus.core.runtime.clock import Clock, SystemClock, VirtualClock
from vcbus.core.runtime.service import Runtime, Service, run_service
from vcbus.core.runtime.settings import Settings
from vcbus.core.runtime.topology import ensure_topics
from vcbus.services.simulation.cycles import CycleLog
from vcbus.services.simulation.outcome import Outcome

log = structlog.get_logger("vcbus.inprocess")

QUIET_YIELDS = 32
"""Event-loop turns without a new record or clock wait after which the system is idle."""
MAX_QUIESCE_ROUNDS = 100_000
ROUNDS = 1_000
"""Steps a virtual run may take to start or stop its services."""


class SimulationError(RuntimeError):
    """The system did not come to rest, or a service did not stop; the message says where."""


# --- inputs ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Publish:
    """Publish ``events`` (on their topics) and ``records`` (as they are) at ``at`` seconds."""

    at: float
    label: str
    events: tuple[Event, ...] = ()
    records: tuple[OutRecord, ...] = ()
    job: str = ""
    """The key of the job this submits, if it submits one (its submit time is noted)."""


@dataclass(frozen=True, slots=True)
class SetPodPhase:
    """Move a bound pod to a phase at ``at`` seconds (a scenario's timeline event)."""

    at: float
    label: str
    request: PodPhaseSetRequested


Input = Publish | SetPodPhase


@dataclass(frozen=True, slots=True)
class Until:
    """When a run ends.

    Attributes:
        seconds: stop at this time; None to stop once settled.
        quiet: seconds without a published record after which the system has settled.
        grace: the same, once every submitted job is rejected or in a final phase.
        limit: never run past this time (a system that never settles).
    """

    seconds: float | None = None
    quiet: float = 10.0
    grace: float = 1.0
    limit: float = 3600.0


# --- clocks ------------------------------------------------------------------------------


class ScaledClock:
    """The system clock sped up ``speed`` times: scenario seconds pass ``speed`` times faster."""

    def __init__(self, speed: float, start: datetime, base: Clock | None = None) -> None:
        if speed <= 0:
            raise ValueError(f"speed must be above 0, got {speed!r}")
        self._base = base or SystemClock()
        self._speed = speed
        self._start = start
        self._origin = self._base.monotonic()

    def now(self) -> datetime:
        """The scenario time: ``start`` plus the scaled time elapsed."""
        return self._start + timedelta(seconds=self.monotonic())

    def monotonic(self) -> float:
        """Scenario seconds since this clock was made."""
        return (self._base.monotonic() - self._origin) * self._speed

    async def sleep(self, seconds: float) -> None:
        """Sleep ``seconds`` of scenario time."""
        await self._base.sleep(seconds / self._speed)

    async def wait_for(self, event: asyncio.Event, timeout: float) -> bool:
        """Wait for ``event`` at most ``timeout`` seconds of scenario time."""
        return await self._base.wait_for(event, timeout / self._speed)


# --- recording ---------------------------------------------------------------------------

OnSend = Callable[[Sequence[OutRecord]], None]


class _RecordingProducer:
    def __init__(self, inner: Producer, on_send: OnSend) -> None:
        self._inner = inner
        self._on_send = on_send

    async def send(self, records: Sequence[OutRecord]) -> None:
        await self._inner.send(records)
        if records:
            self._on_send(records)

    async def stop(self) -> None:
        await self._inner.stop()


class RecordingBus:
    """A bus whose producers report every acknowledged batch, in the order sent."""

    def __init__(self, inner: Bus, on_send: OnSend) -> None:
        self._inner = inner
        self._on_send = on_send

    async def ensure_topics(self, topics: Sequence[TopicConfig]) -> None:
        """Create the topics that do not exist yet."""
        await self._inner.ensure_topics(topics)

    async def partitions(self, topic: str) -> int:
        """Number of partitions of a topic."""
        return await self._inner.partitions(topic)

    def producer(self, *, client_id: str) -> Producer:
        """A producer of the inner bus that reports what it sent."""
        return _RecordingProducer(self._inner.producer(client_id=client_id), self._on_send)

    def consumer(
        self,
        topics: Sequence[str],
        *,
        group: str | None,
        client_id: str,
        on_assigned: RebalanceCallback | None = None,
        on_revoked: RebalanceCallback | None = None,
        partitions: Sequence[TopicPartition] | None = None,
        membership_only: bool = False,
    ) -> Consumer:
        """A consumer of the inner bus."""
        return self._inner.consumer(
            topics,
            group=group,
            client_id=client_id,
            on_assigned=on_assigned,
            on_revoked=on_revoked,
            partitions=partitions,
            membership_only=membership_only,
        )


# --- recording into the outcome -------------------------------------------------------


class _Fold:
    """Decodes recorded batches and folds them into an :class:`Outcome`, timestamped."""

    def __init__(self, outcome: Outcome, clock: Clock, start: datetime, prefix: str) -> None:
        self.outcome = outcome
        self.clock = clock
        self.start = start
        self._prefix = prefix
        self.records = 0
        self.last_activity = start
        self._started = False
        self._codecs: dict[str, TopicCodec[Event] | None] = {}

    def begin(self) -> None:
        """Start the scenario's time now (the services are ready)."""
        self.start = self.last_activity = self.clock.now()
        self._started = True

    def now(self) -> float:
        """Seconds since the start (0 before it: while the services start)."""
        if not self._started:
            return 0.0
        return (self.clock.now() - self.start).total_seconds()

    def _codec(self, topic: str) -> TopicCodec[Event] | None:
        if topic not in self._codecs:
            name = topic.removeprefix(self._prefix)
            codec: TopicCodec[Event] | None = None
            if name in TOPIC_SPECS and name != Topic.JOBS_SUBMITTED:
                codec = TopicCodec(TOPIC_SPECS[Topic(name)].union)
            self._codecs[topic] = codec
        return self._codecs[topic]

    def __call__(self, records: Sequence[OutRecord]) -> None:
        t = self.now()
        self.records += len(records)
        self.last_activity = self.clock.now()
        for record in records:
            if record.topic.endswith(DLT_SUFFIX):
                service = dict(record.headers).get(HEADER_DLT_SERVICE, b"").decode()
                topic = record.topic.removeprefix(self._prefix).removesuffix(DLT_SUFFIX)
                self.outcome.dead_letter(topic, service)
                continue
            codec = self._codec(record.topic)
            if codec is None:
                continue
            decoded = codec.decode_all(record.value)
            if isinstance(decoded, tuple):
                for event in decoded:
                    self.outcome.apply(t, event)


# --- pacers ------------------------------------------------------------------------------


class VirtualPacer:
    """Moves a :class:`VirtualClock` from one waiter to the next once the system is idle."""

    def __init__(self, bus: InMemoryBus, clock: VirtualClock) -> None:
        self.bus = bus
        self.clock = clock
        self.rounds = ROUNDS
        self._progress: Callable[[], int] = lambda: 0

    def watch(self, progress: Callable[[], int]) -> None:
        """Also wait for ``progress()`` (records sent so far) to stop changing."""
        self._progress = progress

    def _mark(self) -> tuple[int, int]:
        return self._progress(), self.clock.registered

    async def quiesce(self) -> None:
        """Let every task run until all consumers wait with nothing to read, stably."""
        for _ in range(MAX_QUIESCE_ROUNDS):
            await self.bus.drain_until_idle()
            mark = self._mark()
            for _ in range(QUIET_YIELDS):
                await asyncio.sleep(0)
            if self.bus.is_idle() and self._mark() == mark:
                return
        raise SimulationError(f"the system did not come to rest at {self.clock.now()}")

    def next_moment(self, due: datetime | None = None) -> datetime | None:
        """The earliest moment something waits for.

        ``due``: the earliest moment the driver knows something is due (an input, a timer,
        the end of the run); idle waits repeat without effect until then or until a wait
        that is not idle ends (``VirtualClock.skip_idle``), so they are skipped to it.
        """
        if due is not None:
            busy = self.clock.next_due()
            self.clock.skip_idle(due if busy is None else min(due, busy))
        return self.clock.next_wakeup()

    async def advance_to(self, moment: datetime) -> None:
        """Move the clock to ``moment``, waking its waiters, and let the system run."""
        self.clock.set(moment)
        await self.quiesce()


class RealPacer:
    """Sleeps on a real (possibly scaled) clock, looking at the system every ``step`` seconds.

    ``patience`` is how many clock seconds the services may take to start (join their
    consumer groups, take their leases) or to stop.
    """

    def __init__(self, clock: Clock, step: float = 0.1, patience: float = 600.0) -> None:
        self.clock = clock
        self.step = step
        self.rounds = max(1, int(patience / step))

    def watch(self, progress: Callable[[], int]) -> None:
        """Nothing to watch: real time passes on its own."""

    async def quiesce(self) -> None:
        """Yield once."""
        await asyncio.sleep(0)

    def next_moment(self, due: datetime | None = None) -> datetime | None:
        """One step from now (``due`` is of no use to a real clock)."""
        return self.clock.now() + timedelta(seconds=self.step)

    async def advance_to(self, moment: datetime) -> None:
        """Sleep until ``moment`` on the clock."""
        wait = (moment - self.clock.now()).total_seconds()
        await self.clock.sleep(max(0.0, wait))


Pacer = VirtualPacer | RealPacer


# --- the run -----------------------------------------------------------------------------


@dataclass
class _Running:
    service: Service
    runtime: Runtime
    task: asyncio.Task[None]


Handler = Callable[[Envelope[Any]], Awaitable[Sequence[Event]]]


def _is_ready(item: _Running) -> bool:
    runtime = item.runtime
    return (
        runtime.ready.is_set()
        and (not item.service.routes or bool(runtime.partitions.assigned))
        and (runtime.lease is None or runtime.lease.is_active)
    )


def _pod_handler(services: Sequence[Service]) -> Handler | None:
    for service in services:
        for route in service.routes:
            if route.topic == Topic.CLUSTER_COMMANDS:
                return route.handler
    return None


async def run_system(
    services: Sequence[Service],
    inputs: Sequence[Input],
    *,
    bus: Bus,
    pacer: Pacer,
    clock: Clock,
    settings: Settings,
    jobs: Iterable[str] = (),
    until: Until | None = None,
    before_start: Sequence[Event] = (),
    cycles: CycleLog | None = None,
) -> dict[str, object]:
    """Run ``services`` on ``bus`` with ``inputs`` applied at their times; fold the outcome.

    Args:
        services: the services, built on ``clock`` and ``settings``.
        inputs: what to publish or hand over, each at its ``at`` seconds from the start (the
            moment every service is ready).
        bus: the bus (an ``InMemoryBus`` on the virtual clock for a :class:`VirtualPacer`).
        pacer: how time moves.
        clock: the services' clock.
        settings: the services' settings (topic prefix, partitions).
        jobs: keys of the submitted jobs, to know when every one has finished.
        until: when to stop (default: once settled).
        before_start: events published before any service starts (queues, so admission
            knows them before the first job).
        cycles: the log the scheduling services report their cycles to; its cycles go to
            the outcome's ``cycles`` (and ``cyclesLeftOut``).

    Returns:
        The outcome (see :meth:`Outcome.report`).

    Raises:
        SimulationError: the system did not come to rest, or did not stop.
    """
    start = clock.now()
    outcome = Outcome(jobs)
    fold = _Fold(outcome, clock, start, settings.topic_prefix)
    recording = RecordingBus(bus, fold)
    pacer.watch(lambda: fold.records)
    await ensure_topics(
        recording, services, settings.topic_prefix, settings.partitions, settings.topics
    )
    producer = recording.producer(client_id="inprocess")
    driver = _Driver(
        bus=recording,
        producer=producer,
        pacer=pacer,
        fold=fold,
        prefix=settings.topic_prefix,
        until=until or Until(),
    )
    try:
        if before_start:
            await driver.publish(before_start, ())
        async with asyncio.TaskGroup() as group:
            for service in services:
                runtime = Runtime(service.name, recording, clock, settings, producer)
                task = group.create_task(
                    run_service(service, recording, settings, clock=clock, runtime=runtime)
                )
                driver.running.append(_Running(service, runtime, task))
            driver.pod_handler = _pod_handler(services)
            await driver.wait_ready()
            fold.begin()
            if cycles is not None:
                cycles.origin = fold.start
            stopped_by = await driver.drive(inputs)
            await driver.stop()
    finally:
        await producer.stop()
    log.info("simulation_stopped", stopped_by=stopped_by, records=fold.records, at=fold.now())
    report = outcome.report(stopped_by=stopped_by, at=fold.now())
    if cycles is not None:
        report["cycles"] = cycles.report()
        report["cyclesLeftOut"] = cycles.left_out
    return report


class _Driver:
    """Applies inputs at their times, moves time with the pacer, decides when to stop."""

    def __init__(
        self, *, bus: Bus, producer: Producer, pacer: Pacer, fold: _Fold, prefix: str, until: Until
    ) -> None:
        self.bus = bus
        self.producer = producer
        self.pacer = pacer
        self.fold = fold
        self.prefix = prefix
        self.until = until
        self.running: list[_Running] = []
        self.pod_handler: Handler | None = None

    async def publish(self, events: Sequence[Event], records: Sequence[OutRecord]) -> None:
        outbox = Outbox(self.prefix)
        outbox.add_events(events)
        for record in records:
            outbox.add_record(record)
        await self.producer.send(outbox.take())

    async def wait_ready(self) -> None:
        """Wait until every service consumes its partitions and singletons hold their lease."""
        for _ in range(self.pacer.rounds):
            await self.pacer.quiesce()
            if all(_is_ready(item) for item in self.running):
                return
            await self._step()
        raise SimulationError(
            "services did not start: "
            + ", ".join(item.service.name for item in self.running if not _is_ready(item))
        )

    async def _step(self, target: datetime | None = None, *, due: datetime | None = None) -> None:
        moment = self.pacer.next_moment(due)
        if target is not None and (moment is None or target < moment):
            moment = target
        if moment is not None:
            await self.pacer.advance_to(moment)

    def _timers_due(self) -> datetime | None:
        return min(
            (
                due
                for item in self.running
                for timer in item.service.timers
                if (due := timer.next_due()) is not None
            ),
            default=None,
        )

    async def drive(self, inputs: Sequence[Input]) -> str:
        start = self.fold.start
        pending = collections.deque(
            sorted(((start + timedelta(seconds=i.at), i) for i in inputs), key=lambda p: p[0])
        )
        outcome, until = self.fold.outcome, self.until
        end = start + timedelta(seconds=until.seconds) if until.seconds is not None else None
        limit = start + timedelta(seconds=until.limit)
        while True:
            now = self.fold.clock.now()
            while pending and pending[0][0] <= now:
                _, item = pending.popleft()
                outcome.note(self.fold.now(), {"event": "input", "input": item.label})
                match item:
                    case Publish():
                        if item.job:
                            outcome.submit(self.fold.now(), item.job)
                        await self.publish(item.events, item.records)
                    case SetPodPhase():
                        await self._set_pod_phase(item)
                await self.pacer.quiesce()
            if end is not None and now >= end:
                return "until"
            if now >= limit:
                return "limit"
            quiet = timedelta(seconds=until.grace if outcome.is_done() else until.quiet)
            settle = self.fold.last_activity + quiet
            timers = self._timers_due()
            if end is None and not pending and timers is None and now >= settle:
                return "stalled" if outcome.unfinished() else "settled"
            targets = [limit, end or settle]
            if pending:
                targets.append(pending[0][0])
            target = min(targets)
            dues = [t for t in (*targets, timers) if t is not None and t > now]
            overdue = timers is not None and timers <= now
            due = None if overdue else min(dues, default=None)
            await self._step(target if target > now else None, due=due)

    async def _set_pod_phase(self, item: SetPodPhase) -> None:
        node = self.fold.outcome.node_of(item.request.pod)
        if self.pod_handler is None or node is None:
            self.fold.outcome.note(
                self.fold.now(),
                {"event": "ignored", "input": item.label, "reason": "pod not on a node"},
            )
            return
        topic = f"{self.prefix}{Topic.CLUSTER_COMMANDS}"
        partition = partition_for(node.encode(), await self.bus.partitions(topic))
        envelope = Envelope(str(Topic.CLUSTER_COMMANDS), node, item.request, partition, -1)
        await self.publish(await self.pod_handler(envelope), ())

    async def stop(self) -> None:
        for item in self.running:
            item.runtime.stopping.set()
        for _ in range(self.pacer.rounds):
            await self.pacer.quiesce()
            if all(item.task.done() for item in self.running):
                return
            await self._step()
        raise SimulationError(
            "services did not stop: "
            + ", ".join(item.service.name for item in self.running if not item.task.done())
        )

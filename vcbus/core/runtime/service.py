"""Service: routes, stores, timers, tables and background tasks, run by one loop.

The delivery loop (docs/design.md#processing-guarantees): poll a batch, handle each record in order,
publish the outputs and dead letters and wait for the acks, then publish the changelog records and
wait for the acks, then commit the offsets. Each batch is one ``batch_handled`` line at
info level (records, outputs, state records, handling and publishing time); each record's
``record_handled`` line is at debug (a line per record cost about 14 µs of a record's
~100 µs in the shell). A crash anywhere before the commit means the
batch is read again; handlers are idempotent and event ids deterministic, so nothing is
lost and nothing is done twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import structlog

from vcbus.contracts._base import Event
from vcbus.core.bus.batch import join
from vcbus.core.bus.dead_letter import dead_letter
from vcbus.core.bus.errors import CommitError, RecordRefusedError
from vcbus.core.bus.outbox import Outbox, Supersedes
from vcbus.core.bus.protocol import Bus, Consumer, Producer
from vcbus.core.bus.records import OutRecord, Record, TopicPartition
from vcbus.core.bus.router import Route, Router
from vcbus.core.runtime.clock import Clock, SystemClock
from vcbus.core.runtime.lease import Lease
from vcbus.core.runtime.settings import Settings
from vcbus.core.runtime.table import Table
from vcbus.core.runtime.timers import Timer
from vcbus.core.runtime.topology import changelog_topic, lease_topic
from vcbus.core.state.changelog import ChangelogStore
from vcbus.core.telemetry.metrics import NO_METRICS, RuntimeMetrics

log = structlog.get_logger("vcbus.service")

RESTORE_WAIT = 120.0
"""How long records wait for their partition's state to be restored."""


@dataclass
class Partitions:
    """The partitions a service's consumer is assigned, and which have their state restored."""

    assigned: frozenset[TopicPartition] = frozenset()
    restoring: frozenset[TopicPartition] = frozenset()
    """Partitions assigned whose state is being restored (not ready meanwhile)."""
    restored: set[int] = field(default_factory=set)
    restore_done: asyncio.Condition = field(default_factory=asyncio.Condition)
    batch: asyncio.Lock = field(default_factory=asyncio.Lock)
    """Held from a batch's handling to its commit, and by the revoke and assign callbacks.

    aiokafka rebalances in a background task, beside a loop that may be publishing a
    batch. A partition given to another member meanwhile was restored and written there
    while the old owner's changelog writes of the batch were still to land, after the new
    owner's: the next restore brought back a state older than the offsets committed
    since. Given back to the same member (Kafka's eager protocol, sticky assignment), it
    was restored without the batch's writes, and the batch was committed all the same.
    The Java consumer runs its callbacks inside ``poll``; the lock gives that order. A
    batch that outlasts the rebalance timeout (the session timeout, 6 s; a frozen
    broker) still loses its membership meanwhile: only transactions would fence it.
    """
    epoch: int = 0
    """Counts revocations; ``revoked_at`` says at which epoch each partition last went."""
    behind: bool = False
    """Partitions were restored since the last batch: their state may have deadlines
    passed while nobody owned them, fired before the next batch's records are handled."""
    revoked_at: dict[int, int] = field(default_factory=dict)

    async def wait_restored(self, partitions: set[int], timeout: float) -> bool:
        """Wait until the stores of ``partitions`` are restored; False if they never are."""
        try:
            async with asyncio.timeout(timeout), self.restore_done:
                await self.restore_done.wait_for(lambda: partitions <= self.restored)
        except TimeoutError:
            return False
        return True

    @contextlib.contextmanager
    def restoring_partitions(self, partitions: frozenset[TopicPartition]) -> Iterator[None]:
        """Mark ``partitions`` as restoring for the block (readiness waits for them)."""
        self.restoring |= partitions
        try:
            yield
        finally:
            self.restoring -= partitions

    async def add(self, partitions: frozenset[TopicPartition]) -> None:
        """Note ``partitions`` assigned with their state restored; wake who waits for them."""
        self.assigned = self.assigned | partitions
        self.behind = True
        async with self.restore_done:
            self.restored.update(tp.partition for tp in partitions)
            self.restore_done.notify_all()

    def current(self, records: Sequence[Record], polled: int) -> list[Record]:
        """The ``records`` polled at epoch ``polled`` whose partition was not revoked since.

        A revoked partition's position is reset to its committed offset when it is
        assigned again: its records polled before are read again, not handled now.
        """
        return [r for r in records if self.revoked_at.get(r.partition, 0) <= polled]

    async def remove(self, partitions: frozenset[TopicPartition]) -> None:
        """Note ``partitions`` revoked."""
        self.epoch += 1
        for tp in partitions:
            self.revoked_at[tp.partition] = self.epoch
        async with self.restore_done:
            self.restored.difference_update(tp.partition for tp in partitions)
        self.assigned = self.assigned - partitions


@dataclass
class Runtime:
    """What a service's background tasks may use while it runs."""

    name: str
    bus: Bus
    clock: Clock
    settings: Settings
    producer: Producer
    lease: Lease | None = None
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    stopping: asyncio.Event = field(default_factory=asyncio.Event)
    polled: asyncio.Event = field(default_factory=asyncio.Event)
    """Set once the consumer's first poll returned (it has joined or is joining its group)."""
    partitions: Partitions = field(default_factory=Partitions)
    stats: dict[str, int] = field(default_factory=dict)
    metrics: RuntimeMetrics = NO_METRICS
    """Fed with what the service consumes, publishes and cycles (nothing kept by default)."""
    dead_lettered: set[tuple[str, int, int]] = field(default_factory=set)
    """Origins (topic, partition, offset) this process's tables sent to a ``.DLT``."""

    async def publish(self, events: Sequence[Event]) -> None:
        """Publish events now and wait for the acks (background tasks such as cycles)."""
        outbox = Outbox(self.settings.topic_prefix)
        outbox.add_events(events)
        await self.send(outbox)

    async def send(self, outbox: Outbox) -> None:
        """Publish what a background task queued and wait for the acks.

        There is no input to dead-letter: a record the broker refuses for good is logged
        and dropped, and the task goes on (docs/design.md#bounded-records).
        """
        await _publish_outputs(self, outbox.take_with_sources())


Task = Callable[[Runtime], Coroutine[Any, Any, None]]


@dataclass
class Service:
    """A service: what it consumes and with what, what it keeps, what it runs beside.

    ``routes`` are consumed in the group ``vcbus-<name>``; ``stores`` are restored for
    the assigned partitions before any record of them is handled; ``timers`` are fired
    between batches; ``tables`` are followed whole by every replica and waited for before
    consuming; ``tasks`` run beside the loop; ``singleton`` adds a lease.
    """

    name: str
    routes: Sequence[Route] = ()
    stores: Sequence[ChangelogStore[Any]] = ()
    timers: Sequence[Timer] = ()
    tables: Sequence[Table] = ()
    tasks: Sequence[Task] = ()
    singleton: bool = False
    on_restored: Callable[[], None] | None = None
    supersedes: Supersedes | None = None
    """Which of a batch's outputs a later one replaces (``vcbus.core.bus.outbox.Supersedes``)."""


def group_id(prefix: str, service: str) -> str:
    """Consumer group of a service: ``vcbus-<service>`` under the default prefix."""
    return f"{prefix.rstrip('.')}-{service}"


async def run_service(
    service: Service,
    bus: Bus,
    settings: Settings,
    *,
    clock: Clock | None = None,
    runtime: Runtime | None = None,
    instance: str = "0",
) -> None:
    """Run ``service`` until cancelled; producers and consumers are closed on the way out."""
    clock = clock or SystemClock()
    prefix = settings.topic_prefix
    client_id = f"{service.name}-{instance}"
    producer = bus.producer(client_id=client_id)
    runtime = runtime or Runtime(service.name, bus, clock, settings, producer)
    runtime.producer = producer
    if service.singleton:
        runtime.lease = Lease(
            bus,
            topic=lease_topic(prefix, service.name),
            group=group_id(prefix, f"{service.name}-lease"),
            client_id=client_id,
        )
    for store in service.stores:
        store.bind(changelog_topic(prefix, service.name, store.name))
    router = Router(
        service.name,
        service.routes,
        prefix=prefix,
        attempts=settings.handler_attempts,
        group=group_id(prefix, service.name),
    )
    structlog.contextvars.bind_contextvars(service=service.name)

    async def assigned(partitions: frozenset[TopicPartition]) -> None:
        async with runtime.partitions.batch:
            await restore(partitions)

    async def restore(partitions: frozenset[TopicPartition]) -> None:
        owned = sorted({tp.partition for tp in partitions})
        with runtime.partitions.restoring_partitions(partitions):
            for store in service.stores:
                read = await store.restore(bus, owned, client_id=f"{client_id}-restore")
                log.info("store_restored", store=store.name, partitions=owned, records=read)
        if service.on_restored is not None:
            service.on_restored()
        await runtime.partitions.add(partitions)
        log.info("partitions_assigned", partitions=owned)

    async def revoked(partitions: frozenset[TopicPartition]) -> None:
        # the batch in hand is published and committed before its partitions go, and so
        # are the changes made since (a table's callback): no write of theirs comes after
        async with runtime.partitions.batch:
            await _publish_state(
                runtime, [record for store in service.stores for record in store.take_writes()]
            )
            gone = {tp.partition for tp in partitions}
            await runtime.partitions.remove(partitions)
            for store in service.stores:
                store.drop(gone)
            log.info("partitions_revoked", partitions=sorted(gone))

    try:
        async with asyncio.TaskGroup() as group:
            # tables, the lease and side tasks run until the service stops
            background = [
                group.create_task(
                    table.follow(
                        bus,
                        prefix=prefix,
                        client_id=client_id,
                        dead_letter=_TableDeadLetters(service.name, producer, runtime),
                    )
                )
                for table in service.tables
            ]
            for table in service.tables:
                await table.wait_caught_up()
            if runtime.lease is not None:
                background.append(group.create_task(runtime.lease.hold()))
            background.extend(group.create_task(task(runtime)) for task in service.tasks)
            if router.topics:
                consume = group.create_task(
                    _consume(
                        service, bus, router, runtime, client_id, assigned=assigned, revoked=revoked
                    )
                )
                await runtime.stopping.wait()
                await consume
            else:
                runtime.ready.set()
                await runtime.stopping.wait()
            log.info("service_stopping", service=service.name)
            for task in background:
                task.cancel()
    finally:
        await producer.stop()


class _TableDeadLetters:
    """Sends a record a table could not decode to its ``.DLT`` topic, once per process.

    Every service following a topic as a table reports what it could not read (header
    ``dlt-service``); a failed send is logged and the table goes on.
    """

    def __init__(self, service: str, producer: Producer, runtime: Runtime) -> None:
        self._service = service
        self._producer = producer
        self._runtime = runtime

    async def __call__(self, record: Record, error: str) -> None:
        origin = (record.topic, record.partition, record.offset)
        if origin in self._runtime.dead_lettered:
            return
        self._runtime.dead_lettered.add(origin)
        letter = dead_letter(record, error, service=self._service)
        try:
            await self._producer.send([letter])
        except Exception as exc:  # noqa: BLE001 - a table must go on; the record stays logged
            log.error("table_dead_letter_failed", topic=record.topic, error=repr(exc))
            return
        self._runtime.metrics.observe_published([letter])
        log.warning(
            "record_dead_lettered",
            topic=record.topic,
            partition=record.partition,
            offset=record.offset,
            error=error,
        )


async def _consume(
    service: Service,
    bus: Bus,
    router: Router,
    runtime: Runtime,
    client_id: str,
    *,
    assigned: Callable[[frozenset[TopicPartition]], Awaitable[None]],
    revoked: Callable[[frozenset[TopicPartition]], Awaitable[None]],
) -> None:
    settings = runtime.settings
    consumer = bus.consumer(
        router.topics,
        group=router.group,
        client_id=client_id,
        on_assigned=assigned,
        on_revoked=revoked,
    )
    outbox = Outbox(settings.topic_prefix, service.supersedes)
    await consumer.start()
    runtime.ready.set()
    runtime.metrics.attach(consumer)
    try:
        while not runtime.stopping.is_set():
            records = await consumer.getmany(
                timeout=_poll_timeout(service.timers, runtime.clock, settings.poll_timeout),
                max_records=settings.max_poll_records,
            )
            runtime.polled.set()
            polled = runtime.partitions.epoch
            if records and not await runtime.partitions.wait_restored(
                {record.partition for record in records}, timeout=RESTORE_WAIT
            ):
                # A partition moved away before its state was restored: its records are
                # left uncommitted, for the member that owns it now.
                records = [r for r in records if r.partition in runtime.partitions.restored]
            async with runtime.partitions.batch:
                await _handle_batch(
                    service,
                    router,
                    runtime,
                    consumer,
                    outbox=outbox,
                    records=runtime.partitions.current(records, polled),
                )
    finally:
        runtime.metrics.attach(None)
        await consumer.stop()


async def _handle_batch(
    service: Service,
    router: Router,
    runtime: Runtime,
    consumer: Consumer,
    *,
    outbox: Outbox,
    records: list[Record],
) -> None:
    """Handle a batch, fire the timers due, publish outputs then state, commit the offsets.

    After a restore the timers fire first: a pod whose run ended while its node's state had
    no owner ends before a binding is judged against that node (else the node looked full:
    the old owner had published the end, and died before writing it to the changelog).
    """
    runtime.metrics.observe_polled(records, consumer.assignment())
    started = time.perf_counter()
    if runtime.partitions.behind:
        runtime.partitions.behind = False
        await _fire_timers(service, runtime, outbox)
    await router.dispatch_batch(records, outbox)
    offsets = {record.tp: record.offset + 1 for record in records}
    await _fire_timers(service, runtime, outbox)
    if not offsets and not len(outbox) and not any(store.has_writes() for store in service.stores):
        return
    handled = time.perf_counter()
    outputs = outbox.take_with_sources()
    await _publish_outputs(runtime, outputs)
    state_records = [record for store in service.stores for record in store.take_writes()]
    await _publish_state(runtime, state_records)
    try:
        await consumer.commit(offsets)
    except CommitError as exc:
        log.warning("commit_failed", error=str(exc), records=len(records))
    runtime.stats["records"] = runtime.stats.get("records", 0) + len(records)
    log.info(
        "batch_handled",
        records=len(records),
        outputs=len(outputs),
        state_records=len(state_records),
        handle_ms=round((handled - started) * 1000, 3),
        publish_ms=round((time.perf_counter() - handled) * 1000, 3),
    )


async def _fire_timers(service: Service, runtime: Runtime, outbox: Outbox) -> None:
    now = runtime.clock.now()
    for timer in service.timers:
        await timer.fire(now, outbox)


async def _publish_outputs(
    runtime: Runtime, queued: Sequence[tuple[OutRecord, Record | None]]
) -> None:
    """Publish a batch's outputs; a record the broker refuses for good dead-letters its input.

    docs/design.md#bounded-records: a service that cannot publish an output sends the input to
    ``<topic>.DLT`` with the error and goes on, instead of failing on the same record after every
    restart. On a refusal the batch is published again input by input (downstream drops what was
    already published by event id); the outputs of an input whose own are refused are
    replaced by its dead letter. An output of a timer or a cycle (no input) that is
    refused is logged and dropped alone. Transient failures still raise, after the bus's
    retries. The events about one key are joined in one record (``batch.join``): over the
    whole batch, then over each input's outputs when published input by input.
    """
    try:
        await _send(runtime, join([record for record, _ in queued]))
        return
    except RecordRefusedError as exc:
        log.warning("batch_refused", error=str(exc), records=len(queued))
    for source, group in itertools.groupby(queued, key=lambda item: item[1]):
        answers = [record for record, _ in group]
        if source is None:
            for record in answers:
                error = await _refusal(runtime, [record])
                if error is not None:
                    log.error("output_dropped", topic=record.topic, error=error)
            continue
        error = await _refusal(runtime, join(answers))
        if error is None:
            continue
        letter = dead_letter(source, f"publishing its output failed: {error}", service=runtime.name)
        again = await _refusal(runtime, [letter])
        if again is not None:
            log.error("dead_letter_refused", topic=source.topic, error=again)
            continue
        log.error(
            "record_dead_lettered",
            topic=source.topic,
            partition=source.partition,
            offset=source.offset,
            error=error,
        )


async def _refusal(runtime: Runtime, records: Sequence[OutRecord]) -> str | None:
    """Publish ``records``; the error if the broker refuses one of them for good."""
    try:
        await _send(runtime, records)
    except RecordRefusedError as exc:
        return str(exc)
    return None


async def _publish_state(runtime: Runtime, records: Sequence[OutRecord]) -> None:
    """Publish changelog records; one the broker refuses for good is logged, the rest go on.

    Reactors refuse a state over the limit before keeping it (``vcbus.core.runtime.reactor``),
    so a refusal here means a broker with a lower limit than vcbus's 1 MiB: the state
    stays in memory and its next change is written again.
    """
    pending = list(records)
    while pending:
        try:
            await runtime.producer.send(pending)
            return
        except RecordRefusedError as exc:
            if exc.record is None or exc.record not in pending:
                raise
            log.error("state_refused", topic=exc.record.topic, error=str(exc))
            pending = pending[pending.index(exc.record) + 1 :]


async def _send(runtime: Runtime, records: Sequence[OutRecord]) -> None:
    await runtime.producer.send(records)
    runtime.metrics.observe_published(records)


def _poll_timeout(timers: Sequence[Timer], clock: Clock, default: float) -> float:
    dues: list[datetime] = [due for timer in timers if (due := timer.next_due()) is not None]
    if not dues:
        return default
    wait = (min(dues) - clock.now()).total_seconds()
    return max(0.0, min(default, wait))

"""KafkaConsumer: the bus's consumer on aiokafka (manual commits, rebalance callbacks).

A consumer in a group commits only what it is told to; without a group it reads every
partition of its topics (or the ones given). Idle, it waits longer per fetch; its
heartbeats tell how long its membership is valid (:meth:`KafkaConsumer.membership_valid_until`).
"""

from __future__ import annotations

import asyncio
import heapq
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener
from aiokafka import TopicPartition as KafkaTopicPartition
from aiokafka.errors import CommitFailedError, IllegalStateError

from vcbus.core.bus.assignor import CopartitionedAssignor
from vcbus.core.bus.errors import CommitError
from vcbus.core.bus.kafka_connect import connect
from vcbus.core.bus.kafka_settings import KafkaSettings
from vcbus.core.bus.protocol import RebalanceCallback
from vcbus.core.bus.records import Record, TopicPartition


class _Listener(ConsumerRebalanceListener):  # type: ignore[misc]
    def __init__(self, owner: KafkaConsumer) -> None:
        self._owner = owner

    async def on_partitions_revoked(self, revoked: Any) -> None:
        await self._owner._revoked(revoked)

    async def on_partitions_assigned(self, assigned: Any) -> None:
        await self._owner._assigned(assigned)


def _tp(kafka_tp: Any) -> TopicPartition:
    return TopicPartition(kafka_tp.topic, kafka_tp.partition)


class KafkaConsumer:
    """aiokafka consumer: manual commits, rebalance callbacks, or every partition without group."""

    def __init__(
        self,
        settings: KafkaSettings,
        topics: tuple[str, ...],
        *,
        group: str | None,
        client_id: str,
        on_assigned: RebalanceCallback | None,
        on_revoked: RebalanceCallback | None,
        fixed: tuple[TopicPartition, ...] | None,
        membership_only: bool = False,
    ) -> None:
        self._settings = settings
        self._membership_only = membership_only
        self._topics = topics
        self._group = group
        self._client_id = client_id
        self._on_assigned = on_assigned
        self._on_revoked = on_revoked
        self._fixed = fixed
        self._consumer: AIOKafkaConsumer | None = None
        self._quiet_since = time.monotonic()
        self._slowed = False
        self._confirmed: float | None = None

    async def _revoked(self, revoked: Any) -> None:
        if self._on_revoked is not None and revoked:
            await self._on_revoked(frozenset(_tp(tp) for tp in revoked))

    async def _assigned(self, assigned: Any) -> None:
        # the group was synced a moment ago: the coordinator's session clock starts afresh
        self._confirmed = time.monotonic()
        if self._membership_only and assigned and self._consumer is not None:
            self._consumer.pause(*assigned)
        if self._on_assigned is not None and assigned:
            await self._on_assigned(frozenset(_tp(tp) for tp in assigned))

    async def start(self) -> None:
        """Connect, then join the group (or assign every partition) from the committed offsets."""
        consumer = AIOKafkaConsumer(
            client_id=self._client_id,
            group_id=self._group,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            session_timeout_ms=self._settings.session_timeout_ms,
            heartbeat_interval_ms=self._settings.heartbeat_interval_ms,
            max_poll_interval_ms=300_000,
            fetch_max_wait_ms=self._settings.fetch_max_wait_ms,
            metadata_max_age_ms=5000,
            # Co-partitioned: a member owns the same partition numbers in every input
            # topic, as state keyed like the inputs needs. Sticky: a lease holder is not
            # displaced by a standby joining (vcbus.core.bus.assignor).
            partition_assignment_strategy=(CopartitionedAssignor(),),
            **self._settings.client_options(),
        )
        await connect(self._settings, consumer.start, consumer.stop, "consumer")
        self._consumer = consumer
        try:
            await self._join(consumer)
        except BaseException:
            # started but not joined (no partitions yet, a callback raised, a cancel): closed
            # here: callers stop a consumer only once its start has returned
            self._consumer = None
            await consumer.stop()
            raise

    async def _join(self, consumer: AIOKafkaConsumer) -> None:
        if self._group is not None:
            _watch_heartbeats(consumer, self._heartbeat_confirmed)
        if self._group is None:
            if self._fixed is not None:
                partitions = [KafkaTopicPartition(tp.topic, tp.partition) for tp in self._fixed]
            else:
                partitions = []
                for topic in self._topics:
                    for _ in range(50):
                        found = consumer.partitions_for_topic(topic)
                        if found:
                            break
                        await consumer._client.force_metadata_update()
                        await asyncio.sleep(0.1)
                    partitions.extend(KafkaTopicPartition(topic, p) for p in sorted(found or ()))
            consumer.assign(partitions)
            await consumer.seek_to_beginning(*partitions)
            await self._assigned(partitions)
        else:
            consumer.subscribe(list(self._topics), listener=_Listener(self))

    def _started(self) -> AIOKafkaConsumer:
        if self._consumer is None:
            raise RuntimeError("consumer not started")
        return self._consumer

    async def getmany(self, timeout: float, max_records: int) -> list[Record]:
        """Fetch up to ``max_records`` records, ordered per partition, merged by timestamp.

        Per partition the records keep their offset order; across partitions they come in
        the order they were produced (record timestamps). A service's input topics are
        co-partitioned: after a redelivery its new owner fetches, say, ``pods.status`` 3
        and ``podgroups.status`` 3 at once. Taken topic by topic, a PodGroup's ``Inqueue``
        would be handled before the pod failure that caused its recreation. Merging by
        timestamp, as Kafka Streams does, restores that order.
        """
        consumer = self._started()
        batches = await consumer.getmany(timeout_ms=int(timeout * 1000), max_records=max_records)
        self._pace(consumer, bool(batches))
        runs = [
            [
                (
                    message.timestamp,
                    message.topic,
                    message.partition,
                    Record(
                        message.topic,
                        message.partition,
                        message.offset,
                        message.key,
                        message.value,
                        tuple((k, b"" if v is None else v) for k, v in message.headers),
                    ),
                )
                for message in batches[kafka_tp]
            ]
            for kafka_tp in sorted(batches, key=lambda tp: (tp.topic, tp.partition))
        ]
        # heapq.merge keeps each partition's own order, whatever its timestamps
        return [item[3] for item in heapq.merge(*runs, key=lambda item: item[:3])]

    @property
    def fetch_wait_ms(self) -> int | None:
        """How long the broker may hold this consumer's next fetch (None before start)."""
        fetcher = getattr(self._consumer, "_fetcher", None)
        wait = getattr(fetcher, "_fetch_max_wait_ms", None)
        return wait if isinstance(wait, int) else None

    def _pace(self, consumer: AIOKafkaConsumer, read: bool) -> None:
        """Wait longer per fetch once quiet for ``idle_after_ms``; back at once on a record.

        aiokafka reads its fetch wait from the fetcher each time it builds a request; a
        client without that attribute keeps its wait.
        """
        settings = self._settings
        if read:
            self._quiet_since = time.monotonic()
            if self._slowed:
                self._slowed = False
                _set_fetch_wait(consumer, settings.fetch_max_wait_ms)
            return
        if (
            not self._slowed
            and settings.idle_fetch_max_wait_ms > settings.fetch_max_wait_ms
            and (time.monotonic() - self._quiet_since) * 1000 >= settings.idle_after_ms
        ):
            self._slowed = True
            _set_fetch_wait(consumer, settings.idle_fetch_max_wait_ms)

    async def commit(self, offsets: Mapping[TopicPartition, int]) -> None:
        """Commit the next offsets to read."""
        if self._group is None or not offsets:
            return
        try:
            await self._started().commit(
                {
                    KafkaTopicPartition(tp.topic, tp.partition): offset
                    for tp, offset in offsets.items()
                }
            )
        except (CommitFailedError, IllegalStateError) as exc:
            raise CommitError(str(exc)) from exc

    def assignment(self) -> frozenset[TopicPartition]:
        """The partitions currently assigned."""
        return frozenset(_tp(tp) for tp in self._started().assignment())

    def _heartbeat_confirmed(self, sent: float) -> None:
        self._confirmed = sent

    def membership_valid_until(self) -> float | None:
        """The last confirmed heartbeat's send time plus the session timeout, less a margin.

        The margin is two heartbeat intervals (at most half the session): a member stalled
        that long stops acting as one before the coordinator can have dropped it.
        """
        if self._group is None:
            return None
        if self._confirmed is None:
            return float("-inf")
        session = self._settings.session_timeout_ms / 1000
        margin = min(2 * self._settings.heartbeat_interval_ms / 1000, session / 2)
        return self._confirmed + session - margin

    async def end_offsets(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        """The offset after the last record of each partition."""
        kafka = [KafkaTopicPartition(tp.topic, tp.partition) for tp in partitions]
        ends = await self._started().end_offsets(kafka)
        return {_tp(tp): int(offset) for tp, offset in ends.items()}

    async def stop(self) -> None:
        """Leave the group and close.

        With the broker gone, aiokafka's fetcher closes by cancelling its fetch task, whose
        retry sleep lets the ``CancelledError`` out of ``stop`` though nobody cancelled the
        caller: that one is swallowed (a stop is a stop); the caller's own cancellation is not.
        """
        if self._consumer is not None:
            consumer, self._consumer = self._consumer, None
            try:
                await consumer.stop()
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if task is not None and task.cancelling():
                    raise


def _watch_heartbeats(consumer: AIOKafkaConsumer, confirmed: Callable[[float], None]) -> None:
    """Tell ``confirmed`` the send time of each heartbeat the group's coordinator accepted.

    aiokafka keeps this to itself (``GroupCoordinator._heartbeat_routine``'s local
    ``last_ok_heartbeat``), so its one heartbeat call is wrapped: the version is pinned by
    the lock file, and a test through the broker checks the times move.
    """
    coordinator = getattr(consumer, "_coordinator", None)
    beat = getattr(coordinator, "_do_heartbeat", None)
    if coordinator is None or beat is None:
        raise RuntimeError("aiokafka's group coordinator has no _do_heartbeat to watch")

    async def watched() -> bool:
        sent = time.monotonic()
        ok = bool(await beat())
        if ok:
            confirmed(sent)
        return ok

    coordinator._do_heartbeat = watched


def _set_fetch_wait(consumer: AIOKafkaConsumer, wait_ms: int) -> None:
    fetcher = getattr(consumer, "_fetcher", None)
    if fetcher is not None and hasattr(fetcher, "_fetch_max_wait_ms"):
        fetcher._fetch_max_wait_ms = wait_ms

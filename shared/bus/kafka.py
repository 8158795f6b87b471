"""AioKafkaBus: the bus protocol on a real Kafka-protocol broker (the only aiokafka user).

Producers wait for ``acks=all`` and retry transient failures with bounded exponential
backoff; consumers never auto-commit. The idempotent producer and transactions are off:
correctness rests on deterministic event ids and idempotent handlers instead (DESIGN §4).
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import ssl
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRebalanceListener
from aiokafka import TopicPartition as KafkaTopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import (
    CommitFailedError,
    IllegalStateError,
    KafkaError,
    KafkaTimeoutError,
    TopicAlreadyExistsError,
)

from contracts.limits import MAX_RECORD_BYTES
from shared.bus.assignor import CopartitionedAssignor
from shared.bus.errors import (
    BrokerUnavailableError,
    CommitError,
    PublishError,
    RecordRefusedError,
)
from shared.bus.protocol import RebalanceCallback
from shared.bus.records import OutRecord, Record, TopicConfig, TopicPartition


@dataclass(frozen=True, slots=True)
class KafkaSettings:
    """How to reach the broker: bootstrap servers, security and client tuning.

    Security settings pass straight to aiokafka (``security_protocol`` PLAINTEXT, SSL,
    SASL_PLAINTEXT or SASL_SSL; ``sasl_mechanism`` PLAIN, SCRAM-SHA-256/512, …).
    """

    bootstrap_servers: str
    security_protocol: str = "PLAINTEXT"
    sasl_mechanism: str | None = None
    sasl_username: str | None = None
    sasl_password: str | None = field(default=None, repr=False)
    ssl_cafile: str | None = None
    ssl_certfile: str | None = None
    ssl_keyfile: str | None = None
    linger_ms: int = 2
    max_batch_size: int = 1 << 20
    fetch_max_wait_ms: int = 25
    """How long the broker may hold a fetch that finds nothing. Tansu answers such a fetch
    only when the wait ends, so this bounds a hop's latency; shorter waits cost the broker
    idle polling (``make bench`` measures both)."""
    session_timeout_ms: int = 6000
    heartbeat_interval_ms: int = 1000
    request_timeout_ms: int = 15000
    max_record_bytes: int = MAX_RECORD_BYTES
    """Largest record a producer sends (aiokafka's ``max_request_size``); a larger one is
    refused before it is sent, as Kafka's default ``message.max.bytes`` would refuse it
    (SPEC A12). Tests that play an outside client sending more set it higher."""
    publish_attempts: int = 8
    backoff_initial: float = 0.1
    backoff_max: float = 5.0

    def client_options(self) -> dict[str, Any]:
        """Options common to aiokafka producers, consumers and the admin client."""
        options: dict[str, Any] = {
            "bootstrap_servers": self.bootstrap_servers,
            "security_protocol": self.security_protocol,
            "request_timeout_ms": self.request_timeout_ms,
        }
        if self.security_protocol in ("SSL", "SASL_SSL"):
            context = ssl.create_default_context(cafile=self.ssl_cafile)
            if self.ssl_certfile:
                context.load_cert_chain(self.ssl_certfile, self.ssl_keyfile)
            options["ssl_context"] = context
        if self.sasl_mechanism:
            options["sasl_mechanism"] = self.sasl_mechanism
            options["sasl_plain_username"] = self.sasl_username
            options["sasl_plain_password"] = self.sasl_password
        return options


def _backoff(settings: KafkaSettings, attempt: int) -> float:
    return float(min(settings.backoff_max, settings.backoff_initial * (2**attempt)))


class AioKafkaBus:
    """The bus on a Kafka-protocol broker."""

    def __init__(self, settings: KafkaSettings) -> None:
        self.settings = settings

    async def _admin(self) -> AIOKafkaAdminClient:
        admin = AIOKafkaAdminClient(**self.settings.client_options())
        for attempt in range(self.settings.publish_attempts):
            try:
                await admin.start()
            except KafkaError:
                await asyncio.sleep(_backoff(self.settings, attempt))
                continue
            return admin
        raise BrokerUnavailableError(f"no broker answers at {self.settings.bootstrap_servers}")

    async def ensure_topics(self, topics: Sequence[TopicConfig]) -> None:
        """Create the topics that do not exist yet (compacted ones with cleanup.policy=compact)."""
        admin = await self._admin()
        try:
            existing = set(await admin.list_topics())
            new = [
                NewTopic(
                    topic.name,
                    num_partitions=topic.partitions,
                    replication_factor=1,
                    topic_configs={"cleanup.policy": "compact"} if topic.compacted else {},
                )
                for topic in topics
                if topic.name not in existing
            ]
            if new:
                with contextlib.suppress(TopicAlreadyExistsError):
                    await admin.create_topics(new)
        finally:
            await admin.close()

    async def partitions(self, topic: str) -> int:
        """Number of partitions of a topic."""
        admin = await self._admin()
        try:
            described = await admin.describe_topics([topic])
        finally:
            await admin.close()
        return len(described[0]["partitions"]) if described else 0

    def producer(self, *, client_id: str) -> KafkaProducer:
        """A producer with acks=all and bounded retries."""
        return KafkaProducer(self.settings, client_id=client_id)

    def consumer(
        self,
        topics: Sequence[str],
        *,
        group: str | None,
        client_id: str,
        on_assigned: RebalanceCallback | None = None,
        on_revoked: RebalanceCallback | None = None,
        partitions: Sequence[TopicPartition] | None = None,
    ) -> KafkaConsumer:
        """A consumer in ``group`` (manual commits), or of every partition without group."""
        return KafkaConsumer(
            self.settings,
            tuple(topics),
            group=group,
            client_id=client_id,
            on_assigned=on_assigned,
            on_revoked=on_revoked,
            fixed=tuple(partitions) if partitions is not None else None,
        )


class KafkaProducer:
    """aiokafka producer that returns only once every record is acknowledged."""

    def __init__(self, settings: KafkaSettings, *, client_id: str) -> None:
        self._settings = settings
        self._client_id = client_id
        self._producer: AIOKafkaProducer | None = None

    async def _started(self) -> AIOKafkaProducer:
        if self._producer is None:
            producer = AIOKafkaProducer(
                client_id=self._client_id,
                acks="all",
                enable_idempotence=False,
                linger_ms=self._settings.linger_ms,
                max_batch_size=self._settings.max_batch_size,
                max_request_size=self._settings.max_record_bytes,
                **self._settings.client_options(),
            )
            for attempt in range(self._settings.publish_attempts):
                try:
                    await producer.start()
                except KafkaError:
                    await asyncio.sleep(_backoff(self._settings, attempt))
                    continue
                self._producer = producer
                break
            else:
                await producer.stop()
                raise BrokerUnavailableError(
                    f"producer could not reach {self._settings.bootstrap_servers}"
                )
        return self._producer

    async def send(self, records: Sequence[OutRecord]) -> None:
        """Publish in order and wait for every acknowledgement, retrying with backoff."""
        if not records:
            return
        producer = await self._started()
        pending = list(records)
        for attempt in range(self._settings.publish_attempts):
            futures = []
            try:
                for record in pending:
                    futures.append(
                        await producer.send(
                            record.topic,
                            record.value,
                            key=record.key,
                            partition=record.partition,
                            headers=list(record.headers),
                        )
                    )
                results = await asyncio.gather(*futures, return_exceptions=True)
            except KafkaError as exc:
                # refused before sending (MessageSizeTooLargeError): the records before it
                # are on their way; it is the one at len(futures)
                results = [*await asyncio.gather(*futures, return_exceptions=True), exc]
            failed = [
                r
                for r, res in zip(pending, results, strict=False)
                if isinstance(res, BaseException)
            ]
            if len(results) < len(pending):
                failed.extend(pending[len(results) :])
            if not failed:
                return
            last = next(res for res in results if isinstance(res, BaseException))
            if (
                isinstance(last, KafkaError)
                and not last.retriable
                and not isinstance(last, KafkaTimeoutError)
            ):
                refused = next(
                    record
                    for record, result in zip(pending, results, strict=False)
                    if result is last
                )
                raise RecordRefusedError(
                    f"the record is refused: {last!r}", record=refused
                ) from last
            # Resend what failed, in order; duplicates are dropped downstream by event id.
            pending = failed
            await asyncio.sleep(_backoff(self._settings, attempt))
        raise PublishError(f"publishing failed after {self._settings.publish_attempts} attempts")

    async def stop(self) -> None:
        """Flush and close."""
        if self._producer is not None:
            producer, self._producer = self._producer, None
            await producer.stop()


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
    ) -> None:
        self._settings = settings
        self._topics = topics
        self._group = group
        self._client_id = client_id
        self._on_assigned = on_assigned
        self._on_revoked = on_revoked
        self._fixed = fixed
        self._consumer: AIOKafkaConsumer | None = None

    async def _revoked(self, revoked: Any) -> None:
        if self._on_revoked is not None and revoked:
            await self._on_revoked(frozenset(_tp(tp) for tp in revoked))

    async def _assigned(self, assigned: Any) -> None:
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
            # displaced by a standby joining (shared.bus.assignor).
            partition_assignment_strategy=(CopartitionedAssignor(),),
            **self._settings.client_options(),
        )
        for attempt in range(self._settings.publish_attempts):
            try:
                await consumer.start()
            except KafkaError:
                await asyncio.sleep(_backoff(self._settings, attempt))
                continue
            break
        else:
            await consumer.stop()
            raise BrokerUnavailableError(
                f"consumer could not reach {self._settings.bootstrap_servers}"
            )
        self._consumer = consumer
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
        batches = await self._started().getmany(
            timeout_ms=int(timeout * 1000), max_records=max_records
        )
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
                        tuple((k, bytes(v)) for k, v in (message.headers or ())),
                    ),
                )
                for message in batches[kafka_tp]
            ]
            for kafka_tp in sorted(batches, key=lambda tp: (tp.topic, tp.partition))
        ]
        # heapq.merge keeps each partition's own order, whatever its timestamps
        return [item[3] for item in heapq.merge(*runs, key=lambda item: item[:3])]

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

    async def end_offsets(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        """The offset after the last record of each partition."""
        kafka = [KafkaTopicPartition(tp.topic, tp.partition) for tp in partitions]
        ends = await self._started().end_offsets(kafka)
        return {_tp(tp): int(offset) for tp, offset in ends.items()}

    async def stop(self) -> None:
        """Leave the group and close."""
        if self._consumer is not None:
            consumer, self._consumer = self._consumer, None
            await consumer.stop()

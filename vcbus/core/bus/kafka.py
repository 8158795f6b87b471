"""AioKafkaBus and its producer: the bus protocol on a real Kafka-protocol broker.

With :mod:`~vcbus.core.bus.kafka_consumer` (the consumer) and
:mod:`~vcbus.core.bus.kafka_connect` (connecting, and why a broker refuses), the only
users of aiokafka.

Producers wait for ``acks=all`` and retry transient failures with bounded exponential
backoff; consumers never auto-commit. The idempotent producer and transactions are off:
correctness rests on deterministic event ids and idempotent handlers instead
(docs/design.md#processing-guarantees).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from aiokafka import AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from aiokafka.errors import (
    KafkaError,
    KafkaTimeoutError,
)

from vcbus.core.bus.errors import (
    PublishError,
    RecordRefusedError,
    TopicCreationError,
)
from vcbus.core.bus.kafka_connect import backoff, connect, refusals
from vcbus.core.bus.kafka_consumer import KafkaConsumer
from vcbus.core.bus.kafka_settings import KafkaSettings
from vcbus.core.bus.protocol import RebalanceCallback
from vcbus.core.bus.records import OutRecord, TopicConfig, TopicPartition


class AioKafkaBus:
    """The bus on a Kafka-protocol broker."""

    def __init__(self, settings: KafkaSettings) -> None:
        self.settings = settings

    async def _admin(self) -> AIOKafkaAdminClient:
        admin = AIOKafkaAdminClient(**self.settings.client_options())
        await connect(self.settings, admin.start, admin.close, "admin client")
        return admin

    async def ensure_topics(self, topics: Sequence[TopicConfig]) -> None:
        """Create the topics that do not exist yet, with their replication and configs.

        Raises:
            TopicCreationError: when the broker refuses a topic (too few brokers for its
                replication factor, a config it does not take ...), with its answer.
        """
        admin = await self._admin()
        try:
            existing = set(await admin.list_topics())
            new = [
                NewTopic(
                    topic.name,
                    num_partitions=topic.partitions,
                    replication_factor=topic.replication_factor,
                    topic_configs=dict(topic.configs),
                )
                for topic in topics
                if topic.name not in existing
            ]
            if not new:
                return
            response = await admin.create_topics(new)
        finally:
            await admin.close()
        refused = refusals(response)
        if refused:
            raise TopicCreationError(
                "the broker refused to create "
                + "; ".join(refused)
                + " (a Kafka of fewer brokers than the replication factor needs "
                "VCBUS_REPLICATION_FACTOR and VCBUS_MIN_INSYNC_REPLICAS; see the topic table)"
            )

    async def partitions(self, topic: str) -> int:
        """Number of partitions of a topic."""
        admin = await self._admin()
        try:
            described = await admin.describe_topics([topic])
        finally:
            await admin.close()
        return len(described[0]["partitions"]) if described else 0

    async def existing_topics(self, names: Sequence[str]) -> dict[str, TopicConfig]:
        """How the broker has those of ``names`` that exist.

        Each with its partitions, replication factor (of partition 0) and the value of every
        config the broker reports.
        """
        admin = await self._admin()
        try:
            found = sorted(set(names) & set(await admin.list_topics()))
            if not found:
                return {}
            layouts = await admin.describe_topics(found)
            answers = await admin.describe_configs(
                [ConfigResource(ConfigResourceType.TOPIC, name) for name in found]
            )
        finally:
            await admin.close()
        configs = {
            str(resource[3]): {str(entry[0]): str(entry[1]) for entry in resource[4]}
            for answer in answers
            for resource in answer.resources
        }
        return {
            layout["topic"]: TopicConfig(
                layout["topic"],
                len(layout["partitions"]),
                len(layout["partitions"][0]["replicas"]) if layout["partitions"] else 0,
                configs.get(layout["topic"], {}),
            )
            for layout in layouts
        }

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
        membership_only: bool = False,
    ) -> KafkaConsumer:
        """A consumer in ``group`` (manual commits), or of every partition without group.

        With ``membership_only`` its partitions are paused once assigned: a lease holder
        sends heartbeats but no fetch every ``fetch_max_wait_ms`` (each an empty fetch
        the broker holds for that long, about 0.01 of a core per consumer at 25 ms).
        """
        return KafkaConsumer(
            self.settings,
            tuple(topics),
            group=group,
            client_id=client_id,
            on_assigned=on_assigned,
            on_revoked=on_revoked,
            fixed=tuple(partitions) if partitions is not None else None,
            membership_only=membership_only,
        )


class KafkaProducer:
    """aiokafka producer that returns only once every record is acknowledged."""

    def __init__(self, settings: KafkaSettings, *, client_id: str) -> None:
        self._settings = settings
        self._client_id = client_id
        self._producer: AIOKafkaProducer | None = None
        self._starting = asyncio.Lock()
        """Held while the client connects: concurrent first sends make one client, not two."""

    async def _started(self) -> AIOKafkaProducer:
        async with self._starting:
            if self._producer is not None:
                return self._producer
            producer = AIOKafkaProducer(
                client_id=self._client_id,
                acks="all",
                enable_idempotence=False,
                linger_ms=self._settings.linger_ms,
                max_batch_size=self._settings.max_batch_size,
                max_request_size=self._settings.max_record_bytes,
                **self._settings.client_options(),
            )
            await connect(self._settings, producer.start, producer.stop, "producer")
            self._producer = producer
            return producer

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
            await asyncio.sleep(backoff(self._settings, attempt))
        raise PublishError(f"publishing failed after {self._settings.publish_attempts} attempts")

    async def stop(self) -> None:
        """Flush and close (after a connect under way, which either started or closed)."""
        async with self._starting:
            producer, self._producer = self._producer, None
        if producer is not None:
            await producer.stop()

"""AioKafkaBus: the bus protocol on a real Kafka-protocol broker (the only aiokafka user).

Producers wait for ``acks=all`` and retry transient failures with bounded exponential
backoff; consumers never auto-commit. The idempotent producer and transactions are off:
correctness rests on deterministic event ids and idempotent handlers instead
(docs/design.md#processing-guarantees).
"""

from __future__ import annotations

import asyncio
import heapq
import ssl
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRebalanceListener
from aiokafka import TopicPartition as KafkaTopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from aiokafka.conn import create_conn
from aiokafka.errors import (
    CommitFailedError,
    IllegalSaslStateError,
    IllegalStateError,
    KafkaError,
    KafkaTimeoutError,
    SaslAuthenticationFailed,
    TopicAlreadyExistsError,
    UnsupportedSaslMechanismError,
    for_code,
)

from vcbus.shared.bus.assignor import CopartitionedAssignor
from vcbus.shared.bus.errors import (
    BrokerAuthenticationError,
    BrokerUnavailableError,
    CommitError,
    PublishError,
    RecordRefusedError,
    TopicCreationError,
)
from vcbus.shared.bus.kafka_settings import KafkaSettings
from vcbus.shared.bus.protocol import RebalanceCallback
from vcbus.shared.bus.records import OutRecord, Record, TopicConfig, TopicPartition


def refusals(response: Any) -> list[str]:
    """What a CreateTopics response refused, one line per topic (one that exists is fine)."""
    out = []
    for entry in response.topic_errors:
        name, code = str(entry[0]), int(entry[1])
        if code in (0, TopicAlreadyExistsError.errno):
            continue
        error = for_code(code)
        message = entry[2] if len(entry) > 2 and entry[2] else error.description
        out.append(f"{name}: {error.message} ({message})")
    return out


def _backoff(settings: KafkaSettings, attempt: int) -> float:
    return float(min(settings.backoff_max, settings.backoff_initial * (2**attempt)))


async def _connect(
    settings: KafkaSettings,
    start: Callable[[], Awaitable[None]],
    close: Callable[[], Awaitable[None]],
    what: str,
) -> None:
    """Run a client's ``start``, retried with backoff while no broker answers.

    However it ends without a started client (no broker, a refusal, the caller cancelled),
    ``close`` closes the client first: aiokafka connects as it starts, and a client nobody
    closes keeps its sockets and tasks until the garbage collector finds it.

    Raises:
        BrokerAuthenticationError: the broker refuses the client's TLS or SASL (at the first
            failure: no retry would help).
        BrokerUnavailableError: no broker answered after every attempt.
    """
    try:
        await _start_with_retries(settings, start, what)
    except BaseException:
        await close()
        raise


async def _start_with_retries(
    settings: KafkaSettings, start: Callable[[], Awaitable[None]], what: str
) -> None:
    for attempt in range(settings.publish_attempts):
        try:
            await start()
        except KafkaError:
            if attempt == 0 and settings.security_protocol != "PLAINTEXT":
                refused = await refusal(settings)
                if refused is not None:
                    raise BrokerAuthenticationError(refused) from None
            await asyncio.sleep(_backoff(settings, attempt))
            continue
        return
    raise BrokerUnavailableError(
        f"{what} could not connect: no broker answers at {settings.bootstrap_servers}"
    )


_SASL_ERRORS = (SaslAuthenticationFailed, UnsupportedSaslMechanismError, IllegalSaslStateError)


async def refusal(settings: KafkaSettings) -> str | None:
    """Why the brokers refuse these settings' TLS or SASL, if they do.

    ``None``: none answered, or one let the client in. aiokafka reports a refused handshake
    as a failure to bootstrap, like a broker that is down; one connection per bootstrap
    server, made as the clients make theirs, tells them apart.
    """
    options = settings.client_options()
    for server in settings.bootstrap_servers.split(","):
        host, _, port = server.strip().rpartition(":")
        try:
            conn = await create_conn(
                host,
                int(port),
                client_id="vcbus-diagnosis",
                request_timeout_ms=settings.request_timeout_ms,
                ssl_context=options.get("ssl_context"),
                security_protocol=settings.security_protocol,
                sasl_mechanism=options.get("sasl_mechanism"),
                sasl_plain_username=settings.sasl_username,
                sasl_plain_password=settings.sasl_password,
            )
        except _SASL_ERRORS as exc:
            detail = exc.args[0] if exc.args and isinstance(exc.args[0], str) else ""
            return (
                f"SASL authentication refused by {server.strip()} "
                f"({settings.sasl_mechanism} as {settings.sasl_username!r}): "
                f"{exc.message}: {detail or exc.description}"
            )
        except ssl.SSLError as exc:
            return f"TLS handshake with {server.strip()} failed: {exc.reason or exc}"
        except (TimeoutError, OSError, ValueError, KafkaError):
            continue
        conn.close()
    return None


class AioKafkaBus:
    """The bus on a Kafka-protocol broker."""

    def __init__(self, settings: KafkaSettings) -> None:
        self.settings = settings

    async def _admin(self) -> AIOKafkaAdminClient:
        admin = AIOKafkaAdminClient(**self.settings.client_options())
        await _connect(self.settings, admin.start, admin.close, "admin client")
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
            await _connect(self._settings, producer.start, producer.stop, "producer")
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
            await asyncio.sleep(_backoff(self._settings, attempt))
        raise PublishError(f"publishing failed after {self._settings.publish_attempts} attempts")

    async def stop(self) -> None:
        """Flush and close (after a connect under way, which either started or closed)."""
        async with self._starting:
            producer, self._producer = self._producer, None
        if producer is not None:
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
            # displaced by a standby joining (vcbus.shared.bus.assignor).
            partition_assignment_strategy=(CopartitionedAssignor(),),
            **self._settings.client_options(),
        )
        await _connect(self._settings, consumer.start, consumer.stop, "consumer")
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

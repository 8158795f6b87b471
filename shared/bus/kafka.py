"""AioKafkaBus: the bus protocol on a real Kafka-protocol broker (the only aiokafka user).

Producers wait for ``acks=all`` and retry transient failures with bounded exponential
backoff; consumers never auto-commit. The idempotent producer and transactions are off:
correctness rests on deterministic event ids and idempotent handlers instead (DESIGN §4).
"""

from __future__ import annotations

import asyncio
import heapq
import ssl
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
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

from contracts.limits import MAX_RECORD_BYTES
from shared.bus.assignor import CopartitionedAssignor
from shared.bus.errors import (
    BrokerAuthenticationError,
    BrokerUnavailableError,
    BusError,
    CommitError,
    PublishError,
    RecordRefusedError,
    TopicCreationError,
)
from shared.bus.protocol import RebalanceCallback
from shared.bus.records import OutRecord, Record, TopicConfig, TopicPartition

TLS_PROTOCOLS = frozenset({"SSL", "SASL_SSL"})
"""Security protocols that carry TLS."""
SASL_PROTOCOLS = frozenset({"SASL_PLAINTEXT", "SASL_SSL"})
"""Security protocols that carry SASL."""
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
"""The SASL mechanisms vcbus configures (user name and password)."""


@dataclass(frozen=True, slots=True)
class KafkaSettings:
    """How to reach the broker: bootstrap servers, security and client tuning.

    Security settings pass to aiokafka (``security_protocol`` PLAINTEXT, SSL,
    SASL_PLAINTEXT or SASL_SSL; ``sasl_mechanism`` PLAIN, SCRAM-SHA-256/512); the TLS
    context is built here (``ssl_context``), with the key's password when it is encrypted.
    ``shared.runtime.settings`` checks that they fit together before anything connects.
    """

    bootstrap_servers: str
    security_protocol: str = "PLAINTEXT"
    sasl_mechanism: str | None = None
    sasl_username: str | None = None
    sasl_password: str | None = field(default=None, repr=False)
    ssl_cafile: str | None = None
    ssl_certfile: str | None = None
    ssl_keyfile: str | None = None
    ssl_key_password: str | None = field(default=None, repr=False)
    linger_ms: int = 2
    max_batch_size: int = 1 << 20
    fetch_max_wait_ms: int = 25
    """How long the broker may hold a fetch that finds nothing. Tansu answers such a fetch
    only when the wait ends, so this bounds a hop's latency; shorter waits cost the broker
    idle polling (``make bench`` measures both)."""
    idle_fetch_max_wait_ms: int = 250
    """The fetch wait of a consumer that has read nothing for ``idle_after_ms``: an idle
    system costs the broker a tenth of the empty fetches; the first record after the quiet
    waits up to this long per hop, and its consumer is back to ``fetch_max_wait_ms`` at
    once. Not above ``fetch_max_wait_ms``: consumers never slow down."""
    idle_after_ms: int = 5000
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
        if self.security_protocol in TLS_PROTOCOLS:
            options["ssl_context"] = self.ssl_context()
        if self.security_protocol in SASL_PROTOCOLS:
            options["sasl_mechanism"] = self.sasl_mechanism
            options["sasl_plain_username"] = self.sasl_username
            options["sasl_plain_password"] = self.sasl_password
        return options

    def ssl_context(self) -> ssl.SSLContext:
        """The TLS context: the broker checked, the client's certificate presented.

        The broker's certificate is checked against ``ssl_cafile`` (the system's CAs when
        unset); the client's certificate and key are presented when given.
        An encrypted key is opened with ``ssl_key_password``; without one it fails here
        (``ssl.SSLError``) rather than asking for a passphrase on the terminal.

        Raises:
            OSError: a file cannot be read, or (``ssl.SSLError``) does not hold what it should.
        """
        context = ssl.create_default_context(cafile=self.ssl_cafile)
        if self.ssl_certfile:
            context.load_cert_chain(
                self.ssl_certfile, self.ssl_keyfile, password=self.ssl_key_password or ""
            )
        return context

    def warnings(self) -> list[str]:
        """What is allowed but unsafe in these settings, for the service's log at start."""
        if self.security_protocol == "SASL_PLAINTEXT" and self.sasl_mechanism == "PLAIN":
            return [
                "KAFKA_SASL_MECHANISM=PLAIN over KAFKA_SECURITY_PROTOCOL=SASL_PLAINTEXT: the "
                "password travels in clear; use SASL_SSL, or a SCRAM mechanism"
            ]
        return []


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
    settings: KafkaSettings, start: Callable[[], Awaitable[None]], what: str
) -> None:
    """Run a client's ``start``, retried with backoff while no broker answers.

    Raises:
        BrokerAuthenticationError: the broker refuses the client's TLS or SASL (at the first
            failure: no retry would help).
        BrokerUnavailableError: no broker answered after every attempt.
    """
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


async def reachable(bootstrap_servers: str, timeout: float) -> bool:
    """Whether one of the bootstrap servers accepts a TCP connection within ``timeout`` s.

    Tried every quarter second until the time is up (a broker that is still starting
    counts). Something listening is enough: TLS and SASL are the clients' to check.
    """
    servers = [server.strip().rpartition(":") for server in bootstrap_servers.split(",")]
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        for host, _, port in servers:
            remaining = deadline - loop.time()
            try:
                async with asyncio.timeout(max(remaining, 0.05)):
                    _, writer = await asyncio.open_connection(host.strip("[]"), int(port))
            except (TimeoutError, OSError, ValueError):
                continue
            writer.close()
            return True
        if loop.time() + 0.25 > deadline:
            return False
        await asyncio.sleep(0.25)


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
        await _connect(self.settings, admin.start, "admin client")
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
                "VCBUS_REPLICATION_FACTOR and VCBUS_MIN_INSYNC_REPLICAS; see deploy/topics.yaml)"
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
            try:
                await _connect(self._settings, producer.start, "producer")
            except BusError:
                await producer.stop()
                raise
            self._producer = producer
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

    async def _revoked(self, revoked: Any) -> None:
        if self._on_revoked is not None and revoked:
            await self._on_revoked(frozenset(_tp(tp) for tp in revoked))

    async def _assigned(self, assigned: Any) -> None:
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
            # displaced by a standby joining (shared.bus.assignor).
            partition_assignment_strategy=(CopartitionedAssignor(),),
            **self._settings.client_options(),
        )
        try:
            await _connect(self._settings, consumer.start, "consumer")
        except BusError:
            await consumer.stop()
            raise
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


def _set_fetch_wait(consumer: AIOKafkaConsumer, wait_ms: int) -> None:
    fetcher = getattr(consumer, "_fetcher", None)
    if fetcher is not None and hasattr(fetcher, "_fetch_max_wait_ms"):
        fetcher._fetch_max_wait_ms = wait_ms

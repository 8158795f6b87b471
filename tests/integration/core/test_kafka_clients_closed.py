"""Every aiokafka client the Kafka bus makes is closed, also when it never got going.

A client connects as it starts; one nobody closes keeps its sockets and tasks until the
garbage collector finds it, in whatever comes later ("Unclosed AIOKafkaProducer"). Here
the bus's clients are aiokafka's own, each recording when it is closed: a start that
fails, is cancelled or races another leaves no client open.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import pytest

from vcbus.core.bus import kafka, kafka_consumer
from vcbus.core.bus.broker import free_port
from vcbus.core.bus.errors import BrokerUnavailableError
from vcbus.core.bus.kafka import AioKafkaBus
from vcbus.core.bus.kafka_settings import KafkaSettings
from vcbus.core.bus.records import OutRecord, TopicConfig, TopicPartition

pytestmark = pytest.mark.integration


@dataclass
class Clients:
    """The clients of one aiokafka class the bus made, and those it closed."""

    made: list[Any] = field(default_factory=list)
    closed: list[Any] = field(default_factory=list)
    connected: asyncio.Event = field(default_factory=asyncio.Event)
    hold: asyncio.Event | None = None
    """Set: a started client waits for it before its start returns (a connect under way)."""

    def open(self) -> list[Any]:
        return [client for client in self.made if client not in self.closed]


def recorded(
    monkeypatch: pytest.MonkeyPatch, name: str, close: str, *, hold: bool = False
) -> Clients:
    """The bus makes its ``name`` clients (aiokafka's) recording what they do."""
    module = kafka_consumer if name == "AIOKafkaConsumer" else kafka
    base = getattr(module, name)
    clients = Clients(hold=asyncio.Event() if hold else None)

    class Recorded(base):  # type: ignore[misc,valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            clients.made.append(self)

        async def start(self) -> None:
            await super().start()
            clients.connected.set()
            if clients.hold is not None:
                await clients.hold.wait()

    async def closing(self: Any) -> None:
        clients.closed.append(self)
        await getattr(base, close)(self)

    setattr(Recorded, close, closing)
    monkeypatch.setattr(module, name, Recorded)
    return clients


@pytest.fixture
def bus(kafka_bootstrap: str) -> AioKafkaBus:
    return AioKafkaBus(KafkaSettings(bootstrap_servers=kafka_bootstrap))


@pytest.fixture
async def topic(bus: AioKafkaBus, topic_prefix: str) -> str:
    name = f"{topic_prefix}clients"
    await bus.ensure_topics([TopicConfig(name, 1)])
    return name


async def test_two_first_sends_at_once_share_one_producer_which_stop_closes(
    monkeypatch: pytest.MonkeyPatch, bus: AioKafkaBus, topic: str
) -> None:
    producers = recorded(monkeypatch, "AIOKafkaProducer", "stop")
    producer = bus.producer(client_id="clients-closed")
    await asyncio.gather(
        producer.send([OutRecord(topic, b"a", b"1")]),
        producer.send([OutRecord(topic, b"b", b"2")]),
    )
    await producer.stop()
    assert len(producers.made) == 1
    assert producers.open() == []
    consumer = bus.consumer([topic], group=None, client_id="clients-closed-reader")
    await consumer.start()
    values: list[bytes | None] = []
    try:
        for _ in range(20):
            values.extend(r.value for r in await consumer.getmany(timeout=0.5, max_records=10))
            if len(values) >= 2:
                break
    finally:
        await consumer.stop()
    assert sorted(v or b"" for v in values) == [b"1", b"2"]


async def test_a_send_cancelled_while_its_producer_connects_closes_the_producer(
    monkeypatch: pytest.MonkeyPatch, bus: AioKafkaBus, topic: str
) -> None:
    producers = recorded(monkeypatch, "AIOKafkaProducer", "stop", hold=True)
    producer = bus.producer(client_id="clients-closed")
    sending = asyncio.create_task(producer.send([OutRecord(topic, b"a", b"1")]))
    await producers.connected.wait()
    sending.cancel()
    with pytest.raises(asyncio.CancelledError):
        await sending
    assert len(producers.made) == 1
    assert producers.open() == []
    await producer.stop()


async def test_a_stop_during_the_first_send_closes_the_producer_that_send_started(
    monkeypatch: pytest.MonkeyPatch, bus: AioKafkaBus, topic: str
) -> None:
    producers = recorded(monkeypatch, "AIOKafkaProducer", "stop", hold=True)
    producer = bus.producer(client_id="clients-closed")
    sending = asyncio.create_task(producer.send([OutRecord(topic, b"a", b"1")]))
    await producers.connected.wait()
    stopping = asyncio.create_task(producer.stop())
    assert producers.hold is not None
    producers.hold.set()
    # the send may land before the stop or find its producer closed: either way it ends
    stopped = (await asyncio.gather(sending, stopping, return_exceptions=True))[1]
    assert stopped is None
    assert len(producers.made) == 1
    assert producers.open() == []


async def test_a_consumer_start_cancelled_while_connecting_closes_the_consumer(
    monkeypatch: pytest.MonkeyPatch, bus: AioKafkaBus, topic: str
) -> None:
    consumers = recorded(monkeypatch, "AIOKafkaConsumer", "stop", hold=True)
    consumer = bus.consumer([topic], group=None, client_id="clients-closed")
    starting = asyncio.create_task(consumer.start())
    await consumers.connected.wait()
    starting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await starting
    assert len(consumers.made) == 1
    assert consumers.open() == []


async def test_a_consumer_whose_assignment_callback_raises_is_closed_by_its_start(
    monkeypatch: pytest.MonkeyPatch, bus: AioKafkaBus, topic: str
) -> None:
    consumers = recorded(monkeypatch, "AIOKafkaConsumer", "stop")

    async def refuse(partitions: frozenset[TopicPartition]) -> None:
        raise ValueError(f"not these: {sorted(partitions)}")

    consumer = bus.consumer([topic], group=None, client_id="clients-closed", on_assigned=refuse)
    with pytest.raises(ValueError, match="not these"):
        await consumer.start()
    assert len(consumers.made) == 1
    assert consumers.open() == []
    with pytest.raises(RuntimeError, match="consumer not started"):
        consumer.assignment()


async def test_an_admin_client_that_finds_no_broker_is_closed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    admins = recorded(monkeypatch, "AIOKafkaAdminClient", "close")
    nobody = AioKafkaBus(
        KafkaSettings(
            bootstrap_servers=f"127.0.0.1:{free_port()}",
            publish_attempts=2,
            backoff_initial=0.01,
        )
    )
    with pytest.raises(BrokerUnavailableError, match="admin client could not connect"):
        await nobody.partitions("anything")
    assert len(admins.made) == 1
    assert admins.open() == []

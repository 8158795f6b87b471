"""The embedded broker as ``vcbus up`` runs it lets in only the holder of its password.

Each test is an attack by a local process (a pod, another user) that can connect to the
broker's address: it must get no record in or out, and hear why at once.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import aiokafka.admin
import aiokafka.conn
import pytest
from aiokafka import AIOKafkaProducer

from tests.support.broker import AuthenticatedBroker
from vcbus.core.bus.broker import free_port, start_gated_broker
from vcbus.core.bus.credentials import FILE_NAME, BusCredentials
from vcbus.core.bus.errors import BrokerAuthenticationError, BrokerUnavailableError, PublishError
from vcbus.core.bus.kafka import AioKafkaBus
from vcbus.core.bus.kafka_settings import KafkaSettings
from vcbus.core.bus.records import OutRecord, TopicConfig
from vcbus.core.runtime.settings import Settings
from vcbus.services.cli.cluster_ca import issue, make_ca

pytestmark = pytest.mark.integration

TOPIC = "vcbus.auth-test"


async def _topic(broker: AuthenticatedBroker) -> AioKafkaBus:
    settings = Settings.from_env(
        {
            "KAFKA_BOOTSTRAP_SERVERS": broker.bootstrap_servers,
            "VCBUS_KAFKA_CREDENTIALS": str(broker.credentials_file),
        }
    )
    bus = AioKafkaBus(settings.kafka)
    await bus.ensure_topics([TopicConfig(TOPIC, partitions=1)])
    return bus


async def test_a_client_without_credentials_is_refused_with_a_clear_error(
    authenticated_broker: AuthenticatedBroker,
) -> None:
    """Attack: a pod connects to the broker on loopback with no credentials at all and
    publishes a forged record (the broker used to accept any client). It is refused, and
    told that the broker wants SASL, not that no broker answers."""
    bus = AioKafkaBus(KafkaSettings(bootstrap_servers=authenticated_broker.bootstrap_servers))
    started = time.monotonic()
    with pytest.raises(BrokerAuthenticationError) as caught:
        await bus.partitions(TOPIC)
    assert "requires SASL authentication" in str(caught.value)
    assert "VCBUS_KAFKA_CREDENTIALS" in str(caught.value)
    assert time.monotonic() - started < 10  # the first failure says so, no retries


async def test_a_wrong_password_is_refused_and_named(
    authenticated_broker: AuthenticatedBroker,
) -> None:
    """Attack: a local process guesses the password of the broker's user."""
    bus = AioKafkaBus(
        KafkaSettings(
            bootstrap_servers=authenticated_broker.bootstrap_servers,
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="SCRAM-SHA-512",
            sasl_username=authenticated_broker.credentials.username,
            sasl_password="guessed",
        )
    )
    with pytest.raises(BrokerAuthenticationError, match="wrong password"):
        await bus.partitions(TOPIC)


async def test_a_failed_scram_exchange_does_not_let_the_client_in(
    authenticated_broker: AuthenticatedBroker, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Attack: Tansu's own ``--authentication`` serves a client whose SCRAM exchange failed
    (an unknown user). The attacker's client ignores the failure and goes on to publish;
    through the gate its connection is closed and nothing is written."""
    monkeypatch.setattr(
        aiokafka.conn.ScramAuthenticator, "process_server_final_message", lambda self, m: None
    )
    await _topic(authenticated_broker)
    producer = AIOKafkaProducer(
        bootstrap_servers=authenticated_broker.bootstrap_servers,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="SCRAM-SHA-512",
        sasl_plain_username="attacker",
        sasl_plain_password="anything",
        request_timeout_ms=3000,
    )
    try:
        with pytest.raises(aiokafka.errors.KafkaConnectionError):
            await asyncio.wait_for(producer.start(), 30)
    finally:
        await producer.stop()


async def test_the_password_in_the_credentials_file_lets_a_client_publish_and_read(
    authenticated_broker: AuthenticatedBroker,
) -> None:
    """The services' way in: ``VCBUS_KAFKA_CREDENTIALS`` names the file ``vcbus up`` wrote."""
    bus = await _topic(authenticated_broker)
    producer = bus.producer(client_id="auth-test")
    try:
        await producer.send([OutRecord(TOPIC, b"k", b"v")])
    finally:
        await producer.stop()
    assert await bus.partitions(TOPIC) == 1


async def test_a_record_over_the_limit_is_refused_by_the_gate(
    authenticated_broker: AuthenticatedBroker,
) -> None:
    """Attack: a client with the password but no client-side limit sends a 3 MiB record
    (the broker kept such records in memory for ever). The gate closes its connection;
    the broker still serves records within the limit."""
    bus = await _topic(authenticated_broker)
    settings = KafkaSettings(
        **{
            **{
                name: getattr(bus.settings, name)
                for name in ("bootstrap_servers", "security_protocol", "sasl_mechanism")
            },
            "sasl_username": bus.settings.sasl_username,
            "sasl_password": bus.settings.sasl_password,
            "max_record_bytes": 8 << 20,
            "max_batch_size": 8 << 20,
            "publish_attempts": 2,
            "request_timeout_ms": 3000,
        }
    )
    big = AioKafkaBus(settings).producer(client_id="auth-test-big")
    try:
        with pytest.raises(PublishError):
            await big.send([OutRecord(TOPIC, b"k", b"x" * (3 << 20))])
    finally:
        await big.stop()
    small = bus.producer(client_id="auth-test-small")
    try:
        await small.send([OutRecord(TOPIC, b"k", b"x" * 1000)])
    finally:
        await small.stop()


async def test_the_gate_serves_tls_to_a_client_that_checks_its_certificate(
    tmp_path: Path,
) -> None:
    """Beyond loopback the password must not travel in clear: the gate given a certificate
    (for the broker's name, from the cluster CA) serves ``SASL_SSL``, and a client that does
    not speak TLS gets no answer it could take for the broker's."""
    ca = make_ca(tmp_path / "ca")
    pair = issue(ca, "localhost", tmp_path / "broker")
    credentials = BusCredentials.make()
    credentials.write(tmp_path / FILE_NAME)
    broker = start_gated_broker(
        tmp_path / FILE_NAME, "localhost", free_port(), tls=(pair.cert, pair.key)
    )
    try:
        settings = Settings.from_env(
            {
                "KAFKA_BOOTSTRAP_SERVERS": broker.bootstrap_servers,
                **credentials.settings(),
                "KAFKA_SECURITY_PROTOCOL": "SASL_SSL",
                "KAFKA_SSL_CAFILE": str(ca.cert),
            }
        )
        bus = AioKafkaBus(settings.kafka)
        await bus.ensure_topics([TopicConfig(TOPIC, partitions=1)])
        producer = bus.producer(client_id="auth-test-tls")
        try:
            await producer.send([OutRecord(TOPIC, b"k", b"v")])
        finally:
            await producer.stop()
        plain = KafkaSettings(bootstrap_servers=broker.bootstrap_servers, publish_attempts=1)
        with pytest.raises((BrokerAuthenticationError, BrokerUnavailableError)):
            await AioKafkaBus(plain).partitions(TOPIC)
    finally:
        broker.stop()


async def test_a_client_asking_for_an_unknown_topic_does_not_create_it(
    authenticated_broker: AuthenticatedBroker,
) -> None:
    """Attack: a client publishes to topics nobody made, one per record (the broker made
    each one and kept it for ever). Through the gate the topic stays unknown."""
    bus = await _topic(authenticated_broker)
    settings = KafkaSettings(
        **{
            name: getattr(bus.settings, name)
            for name in (
                "bootstrap_servers",
                "security_protocol",
                "sasl_mechanism",
                "sasl_username",
                "sasl_password",
            )
        },
        publish_attempts=1,
        request_timeout_ms=2000,
    )
    producer = AIOKafkaProducer(**settings.client_options())
    await producer.start()
    try:
        with pytest.raises(aiokafka.errors.KafkaError):
            await asyncio.wait_for(producer.send_and_wait("vcbus.made-up", b"x"), 30)
    finally:
        await producer.stop()
    admin = aiokafka.admin.AIOKafkaAdminClient(**settings.client_options())
    await admin.start()
    try:
        assert "vcbus.made-up" not in await admin.list_topics()
    finally:
        await admin.close()

"""A broker that refuses the client's SASL or TLS is reported as such, not as a broker that
does not answer (aiokafka says "unable to bootstrap" for both).

The embedded broker (Tansu) runs without SASL, so it refuses any SASL handshake: a real
refusal. A TLS refusal comes from a real TLS endpoint whose certificate (the test-only
pair of tests/unit/core/runtime) the client does not trust.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from vcbus.core.bus.broker import free_port
from vcbus.core.bus.errors import BrokerAuthenticationError, BrokerUnavailableError
from vcbus.core.bus.kafka import AioKafkaBus
from vcbus.core.bus.kafka_settings import KafkaSettings
from vcbus.core.logging import configure_logging
from vcbus.services.cli import main

pytestmark = pytest.mark.integration

CERTS = Path(__file__).resolve().parents[2] / "unit" / "core" / "runtime"


async def test_a_refused_sasl_handshake_says_so_at_once(kafka_bootstrap: str) -> None:
    bus = AioKafkaBus(
        KafkaSettings(
            bootstrap_servers=kafka_bootstrap,
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="SCRAM-SHA-256",
            sasl_username="vcbus",
            sasl_password="not-a-real-password",
        )
    )
    with pytest.raises(BrokerAuthenticationError) as caught:
        await bus.partitions("anything")
    message = str(caught.value)
    assert message.startswith(
        f"SASL authentication refused by {kafka_bootstrap} (SCRAM-SHA-256 as 'vcbus'): "
    )
    assert "UNSUPPORTED_SASL_MECHANISM" in message
    assert "not-a-real-password" not in message


@pytest.fixture(params=["no logging set up", "logging set up in the process"])
def process_logging(request: pytest.FixtureRequest) -> Iterator[None]:
    """The CLI alone, or after a logging setup in the same process (as a test of a service
    run in process leaves it): the client's log lines stay off the terminal either way."""
    root = logging.getLogger()
    before, level = list(root.handlers), root.level
    if request.param == "logging set up in the process":
        configure_logging("test", json=True)
    yield
    root.handlers[:] = before
    root.setLevel(level)


@pytest.mark.usefixtures("process_logging")
def test_the_cli_names_the_sasl_refusal_in_one_line(kafka_bootstrap, monkeypatch, capsys):
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", kafka_bootstrap)
    monkeypatch.setenv("KAFKA_SECURITY_PROTOCOL", "SASL_PLAINTEXT")
    monkeypatch.setenv("KAFKA_SASL_MECHANISM", "SCRAM-SHA-512")
    monkeypatch.setenv("KAFKA_SASL_USERNAME", "vcbus")
    monkeypatch.setenv("KAFKA_SASL_PASSWORD", "not-a-real-password")
    assert main(["get", "jobs"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("vcbus get: SASL authentication refused by ")
    assert "no broker answers" not in err


@pytest.fixture
async def untrusted_tls_endpoint() -> AsyncIterator[str]:
    """A TLS server with a certificate no system CA signed; it closes what connects."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(CERTS / "tls-test-only-cert.pem", CERTS / "tls-test-only-key.pem")

    async def close(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.close()

    server = await asyncio.start_server(close, "127.0.0.1", 0, ssl=context)
    port = server.sockets[0].getsockname()[1]
    async with server:
        yield f"127.0.0.1:{port}"


async def test_a_broker_certificate_the_client_does_not_trust_is_named(
    untrusted_tls_endpoint: str,
) -> None:
    bus = AioKafkaBus(
        KafkaSettings(bootstrap_servers=untrusted_tls_endpoint, security_protocol="SSL")
    )
    with pytest.raises(BrokerAuthenticationError) as caught:
        await bus.partitions("anything")
    assert str(caught.value) == (
        f"TLS handshake with {untrusted_tls_endpoint} failed: CERTIFICATE_VERIFY_FAILED"
    )


async def test_no_broker_at_all_is_still_no_broker_answers() -> None:
    servers = f"127.0.0.1:{free_port()}"
    bus = AioKafkaBus(
        KafkaSettings(
            bootstrap_servers=servers,
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="PLAIN",
            sasl_username="vcbus",
            sasl_password="x",
            publish_attempts=2,
        )
    )
    with pytest.raises(BrokerUnavailableError, match=f"no broker answers at {servers}"):
        await bus.partitions("anything")

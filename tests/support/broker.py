"""Broker fixture: ``KAFKA_BOOTSTRAP_SERVERS`` → a testcontainers Kafka → Tansu on a free port."""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from vcbus.core.bus.broker import EmbeddedBroker, start_broker, start_gated_broker
from vcbus.core.bus.credentials import FILE_NAME, BusCredentials


def _docker_answers() -> bool:
    if not os.environ.get("DOCKER_HOST") and not os.path.exists("/var/run/docker.sock"):
        return False
    try:
        import docker  # noqa: PLC0415 - only where testcontainers is usable

        client = docker.from_env(timeout=2)
        try:
            client.ping()
        finally:
            client.close()
    except Exception:  # noqa: BLE001 - any failure means no engine
        return False
    return True


KAFKA_MIN_SESSION_MS = 6000
"""The shortest session Apache Kafka accepts by default (``group.min.session.timeout.ms``)."""

EMBEDDED_SESSION_MS = 3000
"""The session of tests on the embedded broker, which accepts shorter ones: a stalled or
killed member is out of its group in half the time."""


@functools.cache
def session_ms() -> int:
    """The shortest consumer-group session the suite's broker takes: tests that wait for a
    member's session to pass (a stall, a kill) wait no longer than the broker needs."""
    if os.environ.get("KAFKA_BOOTSTRAP_SERVERS") or _docker_answers():
        return KAFKA_MIN_SESSION_MS
    return EMBEDDED_SESSION_MS


@pytest.fixture(scope="session")
def kafka_bootstrap() -> Iterator[str]:
    """Bootstrap servers of a real Kafka-protocol broker for this test session."""
    given = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
    if given:
        yield given
        return
    if _docker_answers():
        from testcontainers.kafka import KafkaContainer  # noqa: PLC0415

        with KafkaContainer() as container:
            yield container.get_bootstrap_server()
        return
    broker = start_broker()
    try:
        yield broker.bootstrap_servers
    finally:
        broker.stop()


@pytest.fixture
def own_broker() -> Iterator[EmbeddedBroker]:
    """A Tansu broker of the test's own, for tests that freeze or stop the broker."""
    broker = start_broker()
    try:
        yield broker
    finally:
        broker.stop()


@dataclass(frozen=True)
class AuthenticatedBroker:
    """A broker as ``vcbus up`` runs it: Tansu behind the SCRAM gate, and its credentials."""

    broker: EmbeddedBroker
    credentials: BusCredentials
    credentials_file: Path

    @property
    def bootstrap_servers(self) -> str:
        """``host:port`` for clients."""
        return self.broker.bootstrap_servers


@pytest.fixture
def authenticated_broker(tmp_path: Path) -> Iterator[AuthenticatedBroker]:
    """A broker of the test's own that lets in only its one SCRAM-SHA-512 user."""
    credentials = BusCredentials.make()
    path = tmp_path / FILE_NAME
    credentials.write(path)
    broker = start_gated_broker(path)
    try:
        yield AuthenticatedBroker(broker, credentials, path)
    finally:
        broker.stop()


@pytest.fixture
def topic_prefix(request: pytest.FixtureRequest) -> str:
    """A topic prefix unique to the test, so tests sharing a broker do not meet."""
    name = re.sub(r"[^a-zA-Z0-9]+", "-", request.node.name)[:60].strip("-").lower()
    return f"t-{os.getpid()}-{name}."

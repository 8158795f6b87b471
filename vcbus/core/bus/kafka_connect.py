"""Connecting to a Kafka-protocol broker: retries with backoff, and why a broker refuses.

aiokafka reports a refused TLS or SASL handshake as a failure to bootstrap, like a broker
that is down; :func:`refusal` and :func:`unauthenticated_refusal` tell them apart so that
the clients of :mod:`vcbus.core.bus.kafka` fail at once with the broker's reason.
"""

from __future__ import annotations

import asyncio
import ssl
import struct
from collections.abc import Awaitable, Callable
from typing import Any

from aiokafka.conn import create_conn
from aiokafka.errors import (
    IllegalSaslStateError,
    KafkaError,
    SaslAuthenticationFailed,
    TopicAlreadyExistsError,
    UnsupportedSaslMechanismError,
    for_code,
)

from vcbus.core.bus.errors import BrokerAuthenticationError, BrokerUnavailableError
from vcbus.core.bus.kafka_settings import KafkaSettings


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


def backoff(settings: KafkaSettings, attempt: int) -> float:
    """Seconds to wait before attempt ``attempt + 1`` (exponential, bounded)."""
    return float(min(settings.backoff_max, settings.backoff_initial * (2**attempt)))


async def connect(
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
            if attempt == 0:
                refused = await (
                    refusal(settings)
                    if settings.security_protocol != "PLAINTEXT"
                    else unauthenticated_refusal(settings)
                )
                if refused is not None:
                    raise BrokerAuthenticationError(refused) from None
            await asyncio.sleep(backoff(settings, attempt))
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


_METADATA_V0_ALL = struct.pack(">hhih", 3, 0, 1, 15) + b"vcbus-diagnosis" + struct.pack(">i", 0)
"""A ``Metadata`` v0 request for every topic, the first thing a client asks."""


async def unauthenticated_refusal(settings: KafkaSettings) -> str | None:
    """Why a broker refuses a client without credentials, if it does.

    A broker that wants SASL closes the connection on the first request that is not part
    of the handshake; aiokafka reports that as a failure to bootstrap, like a broker that
    is down. One ``Metadata`` request per bootstrap server tells them apart: ``None`` when
    none answered at all, or one answered it.
    """
    for server in settings.bootstrap_servers.split(","):
        host, _, port = server.strip().rpartition(":")
        try:
            async with asyncio.timeout(settings.request_timeout_ms / 1000):
                reader, writer = await asyncio.open_connection(host, int(port))
                try:
                    writer.write(struct.pack(">i", len(_METADATA_V0_ALL)) + _METADATA_V0_ALL)
                    await writer.drain()
                    await reader.readexactly(4)
                finally:
                    writer.close()
        except asyncio.IncompleteReadError:
            return (
                f"the broker at {server.strip()} closed the connection on a request without "
                "credentials: it requires SASL authentication. Set KAFKA_SECURITY_PROTOCOL, "
                "KAFKA_SASL_MECHANISM, KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD, or "
                "VCBUS_KAFKA_CREDENTIALS to the credentials file `vcbus up` wrote"
            )
        except (TimeoutError, OSError, ValueError):
            continue
        return None
    return None

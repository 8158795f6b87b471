"""Settings from the environment: ``KAFKA_*`` and ``OTEL_*`` where standard, ``VCBUS_*`` else."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from contracts.topics import DEFAULT_PREFIX
from shared.bus.kafka import KafkaSettings
from shared.runtime.topic_table import BUILT_IN, TopicTable, topic_table


class SettingsError(ValueError):
    """A setting has a value that cannot be used; the message says how to fix it."""


def _int(env: Mapping[str, str], name: str, default: int, *, minimum: int = 0) -> int:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise SettingsError(
            f"{name}={raw!r} is not a whole number; set it like {name}={default}"
        ) from exc
    if value < minimum:
        raise SettingsError(f"{name}={value} must be at least {minimum}")
    return value


def _float(env: Mapping[str, str], name: str, default: float, *, minimum: float = 0.0) -> float:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError as exc:
        raise SettingsError(
            f"{name}={raw!r} is not a number; set it like {name}={default}"
        ) from exc
    if not math.isfinite(value) or value < minimum:
        raise SettingsError(f"{name}={raw} must be a finite number of at least {minimum}")
    return value


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything a service's shell needs to run.

    Environment variables (defaults in brackets):
    ``KAFKA_BOOTSTRAP_SERVERS`` [embedded broker for ``vcbus up``],
    ``KAFKA_SECURITY_PROTOCOL`` [PLAINTEXT], ``KAFKA_SASL_MECHANISM``, ``KAFKA_SASL_USERNAME``,
    ``KAFKA_SASL_PASSWORD``, ``KAFKA_SSL_CAFILE``, ``KAFKA_SSL_CERTFILE``, ``KAFKA_SSL_KEYFILE``,
    ``VCBUS_TOPIC_PREFIX`` [vcbus.], ``VCBUS_PARTITIONS`` [4],
    ``VCBUS_MAX_POLL_RECORDS`` [500], ``VCBUS_POLL_TIMEOUT`` [0.5 s],
    ``VCBUS_HANDLER_ATTEMPTS`` [3], ``VCBUS_LINGER_MS`` [2], ``VCBUS_FETCH_MAX_WAIT_MS`` [25],
    ``VCBUS_SESSION_TIMEOUT_MS`` [6000], ``VCBUS_MAX_PAYLOAD_BYTES`` [1048576],
    ``VCBUS_CYCLE_REST`` [2.0: under a stream of changes a scheduling service rests this
    many times its last cycle's duration between cycles], ``VCBUS_TOPICS_FILE``
    [deploy/topics.yaml], ``VCBUS_REPLICATION_FACTOR`` and ``VCBUS_MIN_INSYNC_REPLICAS``
    [the topic table's].
    """

    kafka: KafkaSettings
    topic_prefix: str = DEFAULT_PREFIX
    partitions: int = 4
    max_poll_records: int = 500
    poll_timeout: float = 0.5
    handler_attempts: int = 3
    max_payload_bytes: int = 1 << 20
    cycle_rest: float = 2.0
    topics: TopicTable = BUILT_IN
    """How topics are created (``deploy/topics.yaml``, ``shared.runtime.topic_table``)."""
    extra: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_env(
        cls, env: Mapping[str, str] | None = None, *, bootstrap: str | None = None
    ) -> Settings:
        """Read settings from the environment (``os.environ`` when ``env`` is None).

        Raises:
            SettingsError: when a value cannot be used.
            TopicTableError: when the topic table or its overrides cannot be used.
        """
        env = os.environ if env is None else env
        servers = bootstrap or env.get("KAFKA_BOOTSTRAP_SERVERS", "")
        if not servers:
            raise SettingsError(
                "KAFKA_BOOTSTRAP_SERVERS is not set; set it to host:port of a Kafka broker "
                "(or use `vcbus up`, which starts one)"
            )
        kafka = KafkaSettings(
            bootstrap_servers=servers,
            security_protocol=env.get("KAFKA_SECURITY_PROTOCOL", "PLAINTEXT"),
            sasl_mechanism=env.get("KAFKA_SASL_MECHANISM") or None,
            sasl_username=env.get("KAFKA_SASL_USERNAME") or None,
            sasl_password=env.get("KAFKA_SASL_PASSWORD") or None,
            ssl_cafile=env.get("KAFKA_SSL_CAFILE") or None,
            ssl_certfile=env.get("KAFKA_SSL_CERTFILE") or None,
            ssl_keyfile=env.get("KAFKA_SSL_KEYFILE") or None,
            linger_ms=_int(env, "VCBUS_LINGER_MS", 2),
            fetch_max_wait_ms=_int(env, "VCBUS_FETCH_MAX_WAIT_MS", 25),
            session_timeout_ms=_int(env, "VCBUS_SESSION_TIMEOUT_MS", 6000, minimum=1000),
        )
        if kafka.security_protocol not in ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"):
            raise SettingsError(
                f"KAFKA_SECURITY_PROTOCOL={kafka.security_protocol!r} is not one of "
                "PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"
            )
        return cls(
            kafka=kafka,
            topic_prefix=env.get("VCBUS_TOPIC_PREFIX", DEFAULT_PREFIX),
            partitions=_int(env, "VCBUS_PARTITIONS", 4, minimum=1),
            max_poll_records=_int(env, "VCBUS_MAX_POLL_RECORDS", 500, minimum=1),
            poll_timeout=_float(env, "VCBUS_POLL_TIMEOUT", 0.5),
            handler_attempts=_int(env, "VCBUS_HANDLER_ATTEMPTS", 3, minimum=1),
            max_payload_bytes=_int(env, "VCBUS_MAX_PAYLOAD_BYTES", 1 << 20, minimum=1024),
            cycle_rest=_float(env, "VCBUS_CYCLE_REST", 2.0),
            topics=topic_table(env),
            extra={k: v for k, v in env.items() if k.startswith("VCBUS_")},
        )

"""Settings from the environment: ``KAFKA_*`` and ``OTEL_*`` where standard, ``VCBUS_*`` else."""

from __future__ import annotations

import math
import os
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field

from vcbus.contracts.topics import DEFAULT_PREFIX
from vcbus.core.bus.address import AddressError, normalized
from vcbus.core.bus.credentials import CREDENTIALS_ENV, CredentialsError, read_settings
from vcbus.core.bus.kafka_settings import (
    SASL_MECHANISMS,
    SASL_PROTOCOLS,
    TLS_PROTOCOLS,
    KafkaSettings,
)
from vcbus.core.runtime.topic_table import BUILT_IN, TopicTable, topic_table


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


def _check_security(kafka: KafkaSettings) -> None:
    """Refuse security settings that do not fit together (nothing would say so later).

    A SASL or TLS setting under a protocol without SASL or TLS would be dropped, and the
    client connect without it; a SASL protocol needs a mechanism and credentials; the TLS
    files must open (an encrypted key with ``KAFKA_SSL_KEY_PASSWORD``).
    """
    protocol = kafka.security_protocol
    if protocol not in ("PLAINTEXT", "SSL", *SASL_PROTOCOLS):
        raise SettingsError(
            f"KAFKA_SECURITY_PROTOCOL={protocol!r} is not one of "
            "PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"
        )
    sasl = {
        "KAFKA_SASL_MECHANISM": kafka.sasl_mechanism,
        "KAFKA_SASL_USERNAME": kafka.sasl_username,
        "KAFKA_SASL_PASSWORD": kafka.sasl_password,
    }
    tls = {
        "KAFKA_SSL_CAFILE": kafka.ssl_cafile,
        "KAFKA_SSL_CERTFILE": kafka.ssl_certfile,
        "KAFKA_SSL_KEYFILE": kafka.ssl_keyfile,
        "KAFKA_SSL_KEY_PASSWORD": kafka.ssl_key_password,
    }
    for given, names, carried, instead in (
        (sasl, "SASL", SASL_PROTOCOLS, "SASL_SSL or SASL_PLAINTEXT"),
        (tls, "TLS", TLS_PROTOCOLS, "SSL or SASL_SSL"),
    ):
        unused = [name for name, value in given.items() if value]
        if unused and protocol not in carried:
            raise SettingsError(
                f"{', '.join(unused)} set, but KAFKA_SECURITY_PROTOCOL={protocol} carries no "
                f"{names}: the client would connect without it. Set KAFKA_SECURITY_PROTOCOL="
                f"{instead}, or unset {', '.join(unused)}"
            )
    if protocol in SASL_PROTOCOLS:
        if kafka.sasl_mechanism not in SASL_MECHANISMS:
            raise SettingsError(
                f"KAFKA_SECURITY_PROTOCOL={protocol} needs KAFKA_SASL_MECHANISM, one of "
                f"{', '.join(SASL_MECHANISMS)} (it is {kafka.sasl_mechanism!r})"
            )
        missing = [n for n in ("KAFKA_SASL_USERNAME", "KAFKA_SASL_PASSWORD") if not sasl[n]]
        if missing:
            raise SettingsError(
                f"KAFKA_SASL_MECHANISM={kafka.sasl_mechanism} needs {' and '.join(missing)}"
            )
    if protocol in TLS_PROTOCOLS:
        _check_tls(kafka)


def _check_tls(kafka: KafkaSettings) -> None:
    if kafka.ssl_keyfile and not kafka.ssl_certfile:
        raise SettingsError("KAFKA_SSL_KEYFILE is set without KAFKA_SSL_CERTFILE, its certificate")
    if kafka.ssl_key_password and not kafka.ssl_certfile:
        raise SettingsError("KAFKA_SSL_KEY_PASSWORD is set without a key (KAFKA_SSL_CERTFILE)")
    for name, path in (
        ("KAFKA_SSL_CAFILE", kafka.ssl_cafile),
        ("KAFKA_SSL_CERTFILE", kafka.ssl_certfile),
        ("KAFKA_SSL_KEYFILE", kafka.ssl_keyfile),
    ):
        if path and not os.access(path, os.R_OK):
            raise SettingsError(f"{name}={path}: no such file, or not readable")
    try:
        kafka.ssl_context()
    except ssl.SSLError as exc:
        key = kafka.ssl_keyfile or kafka.ssl_certfile
        hint = (
            f": is {key} encrypted? give its password in KAFKA_SSL_KEY_PASSWORD"
            if not kafka.ssl_key_password
            else " (is KAFKA_SSL_KEY_PASSWORD right?)"
        )
        raise SettingsError(
            f"the TLS files do not load: {exc.reason or exc}" + (hint if key else "")
        ) from None


def with_credentials(env: Mapping[str, str]) -> Mapping[str, str]:
    """``env`` over the settings of the credentials file ``VCBUS_KAFKA_CREDENTIALS`` names.

    Raises:
        SettingsError: the file cannot be read or holds something else.
    """
    path = env.get(CREDENTIALS_ENV)
    if not path:
        return env
    try:
        return {**read_settings(path), **env}
    except CredentialsError as exc:
        raise SettingsError(str(exc)) from None


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything a service's shell needs to run.

    Environment variables (defaults in brackets):
    ``KAFKA_BOOTSTRAP_SERVERS`` [embedded broker for ``vcbus up``],
    ``KAFKA_SECURITY_PROTOCOL`` [PLAINTEXT], ``KAFKA_SASL_MECHANISM``, ``KAFKA_SASL_USERNAME``,
    ``KAFKA_SASL_PASSWORD``, ``KAFKA_SSL_CAFILE``, ``KAFKA_SSL_CERTFILE``, ``KAFKA_SSL_KEYFILE``,
    ``KAFKA_SSL_KEY_PASSWORD``, ``VCBUS_KAFKA_CREDENTIALS`` [a file of ``KAFKA_*`` lines
    under the environment's: ``vcbus up`` writes one],
    ``VCBUS_TOPIC_PREFIX`` [vcbus.], ``VCBUS_PARTITIONS`` [4],
    ``VCBUS_MAX_POLL_RECORDS`` [5000], ``VCBUS_POLL_TIMEOUT`` [0.5 s],
    ``VCBUS_HANDLER_ATTEMPTS`` [3], ``VCBUS_LINGER_MS`` [2], ``VCBUS_FETCH_MAX_WAIT_MS`` [25],
    ``VCBUS_IDLE_FETCH_MAX_WAIT_MS`` [250: a consumer quiet for ``VCBUS_IDLE_AFTER_MS``
    [5000] waits this long per fetch until its next record],
    ``VCBUS_SESSION_TIMEOUT_MS`` [6000], ``VCBUS_MAX_PAYLOAD_BYTES`` [1048576],
    ``VCBUS_CYCLE_REST`` [2.0: under a stream of changes a scheduling service rests this
    many times its last cycle's duration between cycles], ``VCBUS_RESYNC_SECONDS`` [10:
    a stateful service sweeps its keys for steps due this often], ``VCBUS_TOPICS_FILE``
    [vcbus/core/runtime/topics.yaml], ``VCBUS_REPLICATION_FACTOR`` and
    ``VCBUS_MIN_INSYNC_REPLICAS`` [the topic table's].
    """

    kafka: KafkaSettings
    topic_prefix: str = DEFAULT_PREFIX
    partitions: int = 4
    max_poll_records: int = 5000
    """Records per batch at most: a batch shares its process spans per job, its changelog
    writes per key and its commit; the fetch sizes bound its bytes (``make bench``: 500 →
    5,000 took about 8 % off the CPU per pod, same hour)."""
    poll_timeout: float = 0.5
    handler_attempts: int = 3
    max_payload_bytes: int = 1 << 20
    cycle_rest: float = 2.0
    resync_seconds: float = 10.0
    """How often a stateful service sweeps its keys for a step due (``reactor.Resync``)."""
    topics: TopicTable = BUILT_IN
    """How topics are created (the topic table, ``vcbus.core.runtime.topic_table``)."""
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
        env = with_credentials(os.environ if env is None else env)
        servers = bootstrap or env.get("KAFKA_BOOTSTRAP_SERVERS", "")
        if not servers:
            raise SettingsError(
                "KAFKA_BOOTSTRAP_SERVERS is not set; set it to host:port of a Kafka broker "
                "(or use `vcbus up`, which starts one)"
            )
        try:
            servers = normalized(servers)
        except AddressError as exc:
            raise SettingsError(f"KAFKA_BOOTSTRAP_SERVERS: {exc}") from None
        kafka = KafkaSettings(
            bootstrap_servers=servers,
            security_protocol=env.get("KAFKA_SECURITY_PROTOCOL", "PLAINTEXT"),
            sasl_mechanism=env.get("KAFKA_SASL_MECHANISM") or None,
            sasl_username=env.get("KAFKA_SASL_USERNAME") or None,
            sasl_password=env.get("KAFKA_SASL_PASSWORD") or None,
            ssl_cafile=env.get("KAFKA_SSL_CAFILE") or None,
            ssl_certfile=env.get("KAFKA_SSL_CERTFILE") or None,
            ssl_keyfile=env.get("KAFKA_SSL_KEYFILE") or None,
            ssl_key_password=env.get("KAFKA_SSL_KEY_PASSWORD") or None,
            linger_ms=_int(env, "VCBUS_LINGER_MS", 2),
            fetch_max_wait_ms=_int(env, "VCBUS_FETCH_MAX_WAIT_MS", 25),
            idle_fetch_max_wait_ms=_int(env, "VCBUS_IDLE_FETCH_MAX_WAIT_MS", 250),
            idle_after_ms=_int(env, "VCBUS_IDLE_AFTER_MS", 5000),
            session_timeout_ms=_int(env, "VCBUS_SESSION_TIMEOUT_MS", 6000, minimum=1000),
        )
        _check_security(kafka)
        return cls(
            kafka=kafka,
            topic_prefix=env.get("VCBUS_TOPIC_PREFIX", DEFAULT_PREFIX),
            partitions=_int(env, "VCBUS_PARTITIONS", 4, minimum=1),
            max_poll_records=_int(env, "VCBUS_MAX_POLL_RECORDS", 5000, minimum=1),
            poll_timeout=_float(env, "VCBUS_POLL_TIMEOUT", 0.5),
            handler_attempts=_int(env, "VCBUS_HANDLER_ATTEMPTS", 3, minimum=1),
            max_payload_bytes=_int(env, "VCBUS_MAX_PAYLOAD_BYTES", 1 << 20, minimum=1024),
            cycle_rest=_float(env, "VCBUS_CYCLE_REST", 2.0),
            resync_seconds=_float(env, "VCBUS_RESYNC_SECONDS", 10.0),
            topics=topic_table(env),
            extra={k: v for k, v in env.items() if k.startswith("VCBUS_")},
        )

"""How to reach the Kafka brokers: addresses, security and client tuning, without the client.

Kept apart from :mod:`vcbus.core.bus.kafka` so that reading settings (every command line, every
service at start) does not import the Kafka client.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass, field
from typing import Any

from vcbus.contracts.limits import MAX_RECORD_BYTES

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
    ``vcbus.core.runtime.settings`` checks that they fit together before anything connects.
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
    (docs/design.md#bounded-records). Tests that play an outside client sending more set it
    higher."""
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

"""Kafka TLS and SASL settings reach aiokafka as given; no credential shows in a repr or a log.

The certificate and key beside this file are a self-signed pair made for these tests only
(``CN=vcbus-test-only``); they protect nothing.
"""

from __future__ import annotations

import json
import ssl
from pathlib import Path

import pytest

from shared.bus.broker import free_port
from shared.runtime.settings import Settings, SettingsError
from tests.support.processes import Processes, event, service_env

HERE = Path(__file__).parent
CERT = HERE / "tls-test-only-cert.pem"
KEY = HERE / "tls-test-only-key.pem"
PASSWORD = "s3cr3t-Pa55w0rd-never-logged"


def secure_env(**extra: str) -> dict[str, str]:
    return {
        "KAFKA_BOOTSTRAP_SERVERS": "kafka-1:9093,kafka-2:9093",
        "KAFKA_SECURITY_PROTOCOL": "SASL_SSL",
        "KAFKA_SASL_MECHANISM": "SCRAM-SHA-512",
        "KAFKA_SASL_USERNAME": "vcbus",
        "KAFKA_SASL_PASSWORD": PASSWORD,
        "KAFKA_SSL_CAFILE": str(CERT),
        "KAFKA_SSL_CERTFILE": str(CERT),
        "KAFKA_SSL_KEYFILE": str(KEY),
        **extra,
    }


def test_tls_and_sasl_settings_reach_aiokafka_when_set_in_the_environment() -> None:
    options = Settings.from_env(secure_env()).kafka.client_options()

    assert options["bootstrap_servers"] == "kafka-1:9093,kafka-2:9093"
    assert options["security_protocol"] == "SASL_SSL"
    assert options["sasl_mechanism"] == "SCRAM-SHA-512"
    assert options["sasl_plain_username"] == "vcbus"
    assert options["sasl_plain_password"] == PASSWORD
    context = options["ssl_context"]
    assert isinstance(context, ssl.SSLContext)
    assert context.verify_mode is ssl.CERT_REQUIRED
    assert context.check_hostname
    assert [cert["subject"] for cert in context.get_ca_certs()] == [
        ((("commonName", "vcbus-test-only"),),)
    ]


def test_plaintext_needs_no_tls_or_sasl_options_when_nothing_is_set() -> None:
    settings = Settings.from_env({"KAFKA_BOOTSTRAP_SERVERS": "localhost:9092"})
    options = settings.kafka.client_options()
    assert options["security_protocol"] == "PLAINTEXT"
    assert "ssl_context" not in options
    assert "sasl_mechanism" not in options


def test_an_unknown_security_protocol_is_refused_when_settings_are_read() -> None:
    with pytest.raises(SettingsError, match="KAFKA_SECURITY_PROTOCOL"):
        Settings.from_env(secure_env(KAFKA_SECURITY_PROTOCOL="TLS"))


def test_the_input_size_limit_is_read_when_set_and_refused_when_too_small() -> None:
    assert Settings.from_env(secure_env(VCBUS_MAX_PAYLOAD_BYTES="65536")).max_payload_bytes == 65536
    with pytest.raises(SettingsError, match="VCBUS_MAX_PAYLOAD_BYTES"):
        Settings.from_env(secure_env(VCBUS_MAX_PAYLOAD_BYTES="10"))


def test_the_password_is_hidden_when_the_settings_are_printed() -> None:
    settings = Settings.from_env(secure_env())
    assert PASSWORD not in repr(settings)
    assert PASSWORD not in str(settings.kafka)
    assert "vcbus" in repr(settings.kafka)  # the user name is no secret


def test_the_password_never_appears_in_a_services_log_when_it_starts_and_connects() -> None:
    """A service at debug level says how it connects (user name, mechanism, protocol) and
    tries a port where no broker answers; nothing it writes holds the password."""
    env = service_env(
        f"127.0.0.1:{free_port()}",
        "sec.",
        VCBUS_LOG_LEVEL="debug",
        VCBUS_HEALTH_PORT="0",
        KAFKA_SECURITY_PROTOCOL="SASL_PLAINTEXT",
        KAFKA_SASL_MECHANISM="PLAIN",
        KAFKA_SASL_USERNAME="vcbus",
        KAFKA_SASL_PASSWORD=PASSWORD,
    )
    with Processes() as processes:
        service = processes.start("admission", "services.cli", "serve", "admission", env=env)
        starting = service.wait_for(event("service_starting"))
        service.wait_for(lambda line: "Unable connect" in str(line.get("event")), count=2)
        service.terminate()
        service.close()
        output = "\n".join(json.dumps(line) for line in service.lines)
    assert starting["sasl_username"] == "vcbus"
    assert starting["security_protocol"] == "SASL_PLAINTEXT"
    assert PASSWORD not in output

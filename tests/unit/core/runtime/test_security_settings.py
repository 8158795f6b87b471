"""Kafka TLS and SASL settings reach aiokafka as given, are refused when they do not fit
together, and no credential shows in a repr or a log.

The certificate and key beside this file are a self-signed pair made for these tests only
(``CN=vcbus-test-only``); they protect nothing. The encrypted key is the same key under
the password ``test-only-key-password``.
"""

from __future__ import annotations

import json
import ssl
from pathlib import Path

import pytest

from tests.support.processes import Processes, event, service_env
from vcbus.core.bus.broker import free_port
from vcbus.core.runtime.settings import Settings, SettingsError

HERE = Path(__file__).parent
CERT = HERE / "tls-test-only-cert.pem"
KEY = HERE / "tls-test-only-key.pem"
ENCRYPTED_KEY = HERE / "tls-test-only-key-encrypted.pem"
KEY_PASSWORD = "test-only-key-password"
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


def sasl_env(protocol: str, **extra: str) -> dict[str, str]:
    return {
        "KAFKA_BOOTSTRAP_SERVERS": "kafka:9092",
        "KAFKA_SECURITY_PROTOCOL": protocol,
        "KAFKA_SASL_MECHANISM": "SCRAM-SHA-512",
        "KAFKA_SASL_USERNAME": "vcbus",
        "KAFKA_SASL_PASSWORD": PASSWORD,
        **extra,
    }


@pytest.mark.parametrize("protocol", ["PLAINTEXT", "SSL"])
def test_sasl_settings_under_a_protocol_without_sasl_are_refused_not_dropped(protocol) -> None:
    with pytest.raises(SettingsError) as caught:
        Settings.from_env(sasl_env(protocol))
    assert str(caught.value) == (
        "KAFKA_SASL_MECHANISM, KAFKA_SASL_USERNAME, KAFKA_SASL_PASSWORD set, but "
        f"KAFKA_SECURITY_PROTOCOL={protocol} carries no SASL: the client would connect "
        "without it. Set KAFKA_SECURITY_PROTOCOL=SASL_SSL or SASL_PLAINTEXT, or unset "
        "KAFKA_SASL_MECHANISM, KAFKA_SASL_USERNAME, KAFKA_SASL_PASSWORD"
    )
    assert PASSWORD not in str(caught.value)


@pytest.mark.parametrize("protocol", ["PLAINTEXT", "SASL_PLAINTEXT"])
def test_tls_files_under_a_protocol_without_tls_are_refused_not_dropped(protocol) -> None:
    env = (
        sasl_env(protocol)
        if protocol.startswith("SASL")
        else {
            "KAFKA_BOOTSTRAP_SERVERS": "kafka:9092",
            "KAFKA_SECURITY_PROTOCOL": protocol,
        }
    )
    with pytest.raises(SettingsError, match=r"KAFKA_SSL_CAFILE set, but .* carries no TLS"):
        Settings.from_env({**env, "KAFKA_SSL_CAFILE": str(CERT)})


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"KAFKA_SASL_MECHANISM": ""}, "needs KAFKA_SASL_MECHANISM, one of PLAIN, SCRAM-SHA-256"),
        (
            {"KAFKA_SASL_MECHANISM": "GSSAPI"},
            "one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 (it is 'GSSAPI')",
        ),
        (
            {"KAFKA_SASL_PASSWORD": ""},
            "KAFKA_SASL_MECHANISM=SCRAM-SHA-512 needs KAFKA_SASL_PASSWORD",
        ),
        (
            {"KAFKA_SASL_USERNAME": "", "KAFKA_SASL_PASSWORD": ""},
            "needs KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD",
        ),
    ],
)
def test_a_sasl_protocol_without_a_mechanism_or_credentials_is_refused(change, says) -> None:
    with pytest.raises(SettingsError) as caught:
        Settings.from_env(sasl_env("SASL_SSL", **change))
    assert says in str(caught.value)


def test_plain_over_sasl_plaintext_is_allowed_with_a_warning_that_the_password_is_in_clear():
    plain = Settings.from_env(sasl_env("SASL_PLAINTEXT", KAFKA_SASL_MECHANISM="PLAIN")).kafka
    assert plain.warnings() == [
        "KAFKA_SASL_MECHANISM=PLAIN over KAFKA_SECURITY_PROTOCOL=SASL_PLAINTEXT: the password "
        "travels in clear; use SASL_SSL, or a SCRAM mechanism"
    ]
    assert Settings.from_env(sasl_env("SASL_PLAINTEXT")).kafka.warnings() == []
    assert Settings.from_env(secure_env(KAFKA_SASL_MECHANISM="PLAIN")).kafka.warnings() == []


def test_an_encrypted_key_opens_with_its_password_and_is_refused_without_it() -> None:
    env = secure_env(KAFKA_SSL_KEYFILE=str(ENCRYPTED_KEY))
    with_password = Settings.from_env({**env, "KAFKA_SSL_KEY_PASSWORD": KEY_PASSWORD})
    assert isinstance(with_password.kafka.client_options()["ssl_context"], ssl.SSLContext)
    assert KEY_PASSWORD not in repr(with_password)
    with pytest.raises(SettingsError, match="give its password in KAFKA_SSL_KEY_PASSWORD"):
        Settings.from_env(env)
    with pytest.raises(SettingsError, match="is KAFKA_SSL_KEY_PASSWORD right"):
        Settings.from_env({**env, "KAFKA_SSL_KEY_PASSWORD": "wrong"})


def test_tls_files_that_cannot_be_read_or_do_not_pair_are_refused(tmp_path) -> None:
    with pytest.raises(SettingsError, match=r"KAFKA_SSL_CAFILE=.*absent\.pem: no such file"):
        Settings.from_env(secure_env(KAFKA_SSL_CAFILE=str(tmp_path / "absent.pem")))
    with pytest.raises(SettingsError, match="KAFKA_SSL_KEYFILE is set without KAFKA_SSL_CERTFILE"):
        Settings.from_env(secure_env(KAFKA_SSL_CERTFILE=""))
    with pytest.raises(SettingsError, match="the TLS files do not load"):
        Settings.from_env(secure_env(KAFKA_SSL_KEYFILE=str(CERT)))  # a certificate, no key


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
        service = processes.start("admission", "vcbus.services.cli", "serve", "admission", env=env)
        starting = service.wait_for(event("service_starting"))
        unsafe = service.wait_for(event("unsafe_kafka_settings_accepted"))
        service.wait_for(lambda line: "Unable connect" in str(line.get("event")), count=2)
        service.terminate()
        service.close()
        output = "\n".join(json.dumps(line) for line in service.lines)
    assert starting["sasl_username"] == "vcbus"
    assert starting["security_protocol"] == "SASL_PLAINTEXT"
    assert unsafe["level"] == "warning"
    assert "the password travels in clear" in unsafe["warning"]
    assert PASSWORD not in output

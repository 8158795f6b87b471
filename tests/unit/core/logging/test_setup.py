import json
import logging
from datetime import datetime

import pytest
import structlog
from opentelemetry import trace

from vcbus.core.logging import configure_logging

log = structlog.get_logger()


def json_lines(text: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in text.splitlines()]


def test_json_lines_carry_service_level_time_and_trace_ids_when_json_is_chosen(capsys, tracer):
    configure_logging("admission", json=True)

    with tracer.start_as_current_span("admission.validate") as span:
        log.info("job_admitted", job="ns/a")

    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = json_lines(captured.err)
    context = span.get_span_context()
    assert line == {
        "event": "job_admitted",
        "job": "ns/a",
        "level": "info",
        "service": "admission",
        "trace_id": trace.format_trace_id(context.trace_id),
        "span_id": trace.format_span_id(context.span_id),
        "timestamp": line["timestamp"],
    }
    assert datetime.fromisoformat(str(line["timestamp"])).utcoffset() is not None


def test_lines_are_json_when_stderr_is_not_a_terminal(capsys):
    configure_logging("cluster")

    log.info("node_registered", node="n1")

    assert json_lines(capsys.readouterr().err)[0]["node"] == "n1"


def test_lines_are_readable_text_when_json_is_off(capsys):
    configure_logging("cluster", json=False)

    log.info("node_registered", node="n1")

    err = capsys.readouterr().err
    assert "node_registered" in err
    assert "node" in err
    assert "n1" in err
    with pytest.raises(json.JSONDecodeError):
        json.loads(err)


def test_terminal_escapes_in_logged_values_are_escaped_when_lines_are_text(capsys):
    configure_logging("admission", json=False)

    log.warning("job_rejected", queue="\x1b]0;owned\x07\x1b[2Jq", reason="a\x9bb")

    err = capsys.readouterr().err
    assert "\x1b" not in err
    assert "\x9b" not in err
    assert "\\u001b]0;owned\\u0007\\u001b[2Jq" in err


def test_context_variables_appear_and_secrets_are_masked_when_rendered(capsys):
    configure_logging("allocator", json=True)
    structlog.contextvars.bind_contextvars(topic="vcbus.pods", sasl_plain_password="hunter2")

    log.info("record_handled", emitted=3)

    err = capsys.readouterr().err
    assert "hunter2" not in err
    (line,) = json_lines(err)
    assert line["topic"] == "vcbus.pods"
    assert line["sasl_plain_password"] == "***"
    assert line["emitted"] == 3


def test_lower_levels_are_dropped_when_vcbus_log_level_is_higher(capsys, monkeypatch):
    monkeypatch.setenv("VCBUS_LOG_LEVEL", "warning")
    configure_logging("allocator", json=True, level="debug")

    log.info("cycle_finished")
    log.warning("lease_lost")

    assert [line["event"] for line in json_lines(capsys.readouterr().err)] == ["lease_lost"]


def test_debug_lines_are_written_when_level_is_debug(capsys):
    configure_logging("allocator", json=True, level="debug")

    log.debug("cycle_started")

    assert json_lines(capsys.readouterr().err)[0]["level"] == "debug"


def test_a_logger_keeps_its_first_configuration_when_loggers_are_cached(capsys):
    """``vcbus serve`` configures once and caches: a logger stops rebinding on every call."""
    used = structlog.get_logger()
    configure_logging("job-controller", json=True, level="info", cache=True)
    used.info("batch_handled")
    used.debug("record_handled")

    configure_logging("job-controller", json=True, level="debug", cache=True)
    used.debug("record_handled")  # still the first configuration's level: dropped
    structlog.get_logger().debug("fresh")  # a logger not used yet takes the new one

    assert [line["event"] for line in json_lines(capsys.readouterr().err)] == [
        "batch_handled",
        "fresh",
    ]


def test_start_up_fails_with_the_known_levels_when_level_is_unknown(monkeypatch):
    monkeypatch.setenv("VCBUS_LOG_LEVEL", "loud")

    with pytest.raises(ValueError, match="debug, info, warning, error, critical"):
        configure_logging("allocator")


def test_stdlib_records_become_json_lines_with_the_service_when_configured(capsys, tracer):
    configure_logging("job-controller", json=True)

    with tracer.start_as_current_span("process vcbus.pods"):
        logging.getLogger("aiokafka.consumer").warning("Heartbeat failed for group %s", "g")

    (line,) = json_lines(capsys.readouterr().err)
    assert line["event"] == "Heartbeat failed for group g"
    assert line["logger"] == "aiokafka.consumer"
    assert line["level"] == "warning"
    assert line["service"] == "job-controller"
    assert len(str(line["trace_id"])) == 32


def test_tracebacks_are_structured_without_local_variables_when_exceptions_are_logged(capsys):
    configure_logging("admission", json=True)

    def connect() -> None:
        password = "hunter2"
        raise ConnectionError("broker down " + str(len(password)))

    try:
        connect()
    except ConnectionError:
        log.exception("broker_unreachable")

    err = capsys.readouterr().err
    assert "hunter2" not in err
    (line,) = json_lines(err)
    exception = line["exception"]
    assert isinstance(exception, list)
    assert exception[0]["exc_type"] == "ConnectionError"
    assert exception[0]["exc_value"] == "broker down 7"


def test_second_configuration_replaces_the_first_when_called_again(capsys):
    configure_logging("admission", json=True)
    configure_logging("cluster", json=True)

    log.info("node_registered")
    logging.getLogger("aiokafka").warning("rebalancing")

    lines = json_lines(capsys.readouterr().err)
    assert [line["service"] for line in lines] == ["cluster", "cluster"]


class _Opaque:
    def __repr__(self) -> str:
        return "<opaque>"


def test_values_json_cannot_hold_are_written_as_their_repr_and_the_line_stays_json(capsys):
    configure_logging("cluster", json=True)

    log.info("node_registered", node=_Opaque(), counts={1: "a"}, at=datetime(2026, 1, 2, 3, 4))

    (line,) = json_lines(capsys.readouterr().err)
    assert line["node"] == "<opaque>"
    assert line["counts"] == {"1": "a"}
    assert line["at"] == "2026-01-02T03:04:00"

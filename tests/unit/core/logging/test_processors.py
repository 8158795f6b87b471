import structlog
from opentelemetry import trace
from structlog.testing import capture_logs

from vcbus.core.logging import (
    REDACTED,
    add_record_context,
    add_service,
    add_trace_context,
    record_context,
    redact_secrets,
)

log = structlog.get_logger()


def test_lines_carry_the_current_trace_and_span_ids_when_a_span_is_current(tracer):
    with (
        capture_logs(processors=[add_trace_context]) as lines,
        tracer.start_as_current_span("controller.reconcile") as span,
    ):
        log.info("job_reconciled")

    context = span.get_span_context()
    assert lines == [
        {
            "event": "job_reconciled",
            "log_level": "info",
            "trace_id": trace.format_trace_id(context.trace_id),
            "span_id": trace.format_span_id(context.span_id),
        }
    ]


def test_lines_have_no_trace_ids_when_no_span_is_current():
    with capture_logs(processors=[add_trace_context]) as lines:
        log.info("service_started")

    assert lines == [{"event": "service_started", "log_level": "info"}]


def test_explicit_trace_id_is_kept_when_a_span_is_current(tracer):
    with (
        capture_logs(processors=[add_trace_context]) as lines,
        tracer.start_as_current_span("allocator.cycle"),
    ):
        log.info("job_allocated", trace_id="0af7651916cd43dd8448eb211c80319c")

    assert lines[0]["trace_id"] == "0af7651916cd43dd8448eb211c80319c"
    assert len(lines[0]["span_id"]) == 16


def test_lines_name_the_service_when_add_service_is_configured():
    with capture_logs(processors=[add_service("job-controller")]) as lines:
        log.info("record_handled")

    assert lines[0]["service"] == "job-controller"


def test_secret_values_are_masked_when_logged():
    with capture_logs(processors=[redact_secrets]) as lines:
        log.info(
            "broker_connected",
            sasl_plain_password="hunter2",
            ssl_keyfile="/etc/kafka/client.key",
            api_token="t0k3n",
            client_secret="s3cr3t",
            settings={"bootstrap": "kafka:9092", "sasl": {"password": "hunter2"}},
            key="ns/a",
            ssl_cafile="/etc/kafka/ca.pem",
        )

    assert lines[0] == {
        "event": "broker_connected",
        "log_level": "info",
        "sasl_plain_password": REDACTED,
        "ssl_keyfile": REDACTED,
        "api_token": REDACTED,
        "client_secret": REDACTED,
        "settings": {"bootstrap": "kafka:9092", "sasl": {"password": REDACTED}},
        "key": "ns/a",
        "ssl_cafile": "/etc/kafka/ca.pem",
    }


def test_unset_secret_stays_visible_as_none_when_logged():
    with capture_logs(processors=[redact_secrets]) as lines:
        log.info("settings_loaded", sasl_plain_password=None)

    assert lines[0]["sasl_plain_password"] is None


def test_lines_carry_the_record_being_handled_and_keep_their_own_values():
    with capture_logs(processors=[add_record_context]) as lines:
        with record_context(topic="vcbus.pods", offset=7, job="ns/a"):
            log.warning("handler_retried", job="ns/b")
            with record_context(topic="vcbus.bindings"):
                log.info("inner")
            log.info("outer_again")
        log.info("after")

    assert lines == [
        {
            "event": "handler_retried",
            "log_level": "warning",
            "job": "ns/b",
            "topic": "vcbus.pods",
            "offset": 7,
        },
        {"event": "inner", "log_level": "info", "topic": "vcbus.bindings"},
        {
            "event": "outer_again",
            "log_level": "info",
            "topic": "vcbus.pods",
            "offset": 7,
            "job": "ns/a",
        },
        {"event": "after", "log_level": "info"},
    ]

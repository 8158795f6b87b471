"""configure_tracing is process-wide, so each case runs in a fresh interpreter."""

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.otlp_receiver import OtlpReceiver, ReceivedSpan

ROOT = Path(__file__).resolve().parents[4]

ONE_SPAN = """
from vcbus.core.tracing import (
    business_span, configure_tracing, current_trace_id, shutdown_tracing,
)
configure_tracing("admission")
with business_span("admission.validate", job="ns/a"):
    print(current_trace_id(), file=sys.stderr)
shutdown_tracing()
"""

SEND_AND_PROCESS = """
from vcbus.core.tracing import (
    business_span, configure_tracing, process_span, send_span, shutdown_tracing,
)
configure_tracing("admission")
headers = []
with send_span("vcbus.jobs.admitted", key="ns/a", event_type="job.admitted.v1",
               event_id="e-1", headers=headers):
    pass
with process_span("vcbus.jobs.admitted", partition=0, offset=7, key="ns/a",
                  event_type="job.admitted.v1", event_id="e-1", headers=headers,
                  group="vcbus-job-controller"):
    with business_span("controller.reconcile", job="ns/a"):
        pass
shutdown_tracing()
"""


def run(script: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {name: value for name, value in os.environ.items() if not name.startswith("OTEL_")}
    return subprocess.run(
        [sys.executable, "-c", "import sys\n" + textwrap.dedent(script)],
        env={**clean, **env},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as running:
        yield running


def by_name(spans: list[ReceivedSpan]) -> dict[str, ReceivedSpan]:
    return {span.name: span for span in spans}


def test_spans_print_as_json_on_stdout_when_exporter_is_console():
    result = run(ONE_SPAN, OTEL_TRACES_EXPORTER="console")

    assert result.returncode == 0, result.stderr
    span = json.loads(result.stdout)
    assert span["name"] == "admission.validate"
    assert span["attributes"] == {"vcbus.job": "ns/a"}
    assert span["resource"]["attributes"]["service.name"] == "admission"


def test_service_name_comes_from_otel_service_name_when_it_is_set():
    result = run(ONE_SPAN, OTEL_TRACES_EXPORTER="console", OTEL_SERVICE_NAME="admission-canary")

    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["resource"]["attributes"]["service.name"] == (
        "admission-canary"
    )


def test_nothing_is_exported_but_trace_ids_exist_when_exporter_is_none(receiver):
    result = run(
        ONE_SPAN, OTEL_TRACES_EXPORTER="none", OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    assert len(result.stderr.strip()) == 32
    assert receiver.spans == []


def test_nothing_is_exported_when_no_exporter_and_no_endpoint_are_set():
    result = run(ONE_SPAN)

    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    assert len(result.stderr.strip()) == 32


def test_start_up_fails_with_a_fix_when_exporter_is_unknown():
    result = run(ONE_SPAN, OTEL_TRACES_EXPORTER="jaeger")

    assert result.returncode != 0
    assert "OTEL_TRACES_EXPORTER='jaeger'" in result.stderr
    assert "otlp, console, none" in result.stderr


@pytest.mark.parametrize(
    ("variable", "suffix"),
    [("OTEL_EXPORTER_OTLP_ENDPOINT", ""), ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "/v1/traces")],
)
def test_one_connected_trace_reaches_the_otlp_receiver_when_an_endpoint_is_set(
    receiver, variable, suffix
):
    result = run(
        SEND_AND_PROCESS,
        OTEL_SERVICE_NAME="job-controller",
        **{variable: receiver.endpoint + suffix},
    )

    assert result.returncode == 0, result.stderr
    spans = by_name(receiver.spans)
    send = spans["send vcbus.jobs.admitted"]
    process = spans["process vcbus.jobs.admitted"]
    reconcile = spans["controller.reconcile"]
    assert (send.kind, process.kind, reconcile.kind) == ("PRODUCER", "CONSUMER", "INTERNAL")
    assert {span.trace_id for span in spans.values()} == {send.trace_id}
    assert send.parent_span_id == ""
    assert process.parent_span_id == send.span_id
    assert reconcile.parent_span_id == process.span_id
    assert {span.service_name for span in spans.values()} == {"job-controller"}
    assert process.attributes["messaging.kafka.offset"] == 7
    assert process.attributes["messaging.consumer.group.name"] == "vcbus-job-controller"
    assert reconcile.attributes == {"vcbus.job": "ns/a"}


def test_explicit_exporters_keep_receiving_spans_when_tracing_is_shut_down():
    result = run("""
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from vcbus.core.tracing import business_span, configure_tracing, shutdown_tracing
    exporter = InMemorySpanExporter()
    configure_tracing("admission", exporter=exporter)
    shutdown_tracing()
    with business_span("admission.validate"):
        pass
    print([span.name for span in exporter.get_finished_spans()])
    """)

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "['admission.validate']"

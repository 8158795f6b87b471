import asyncio

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanContext, SpanKind, StatusCode, TraceFlags

from vcbus.core.tracing import (
    business_span,
    configure_tracing,
    context_of,
    current_trace_id,
    cycle_span,
    job_span,
    process_span,
    send_span,
    span_context_of,
)

TOPIC = "vcbus.jobs.admitted"


def send(headers: list[tuple[str, bytes]], key: str | None = "ns/a") -> None:
    with send_span(TOPIC, key=key, event_type="job.admitted.v1", event_id="e-1", headers=headers):
        pass


def build_headers() -> list[tuple[str, bytes]]:
    headers: list[tuple[str, bytes]] = [("event-type", b"job.admitted.v1")]
    send(headers)
    return headers


def process(headers: list[tuple[str, bytes]], group: str | None = "vcbus-job-controller"):
    return process_span(
        TOPIC,
        partition=3,
        offset=42,
        key="ns/a",
        event_type="job.admitted.v1",
        event_id="e-1",
        headers=headers,
        group=group,
    )


def finished(exporter: InMemorySpanExporter, name: str) -> ReadableSpan:
    (span,) = [span for span in exporter.get_finished_spans() if span.name == name]
    return span


def ids(span: ReadableSpan) -> tuple[int, int]:
    context = span.get_span_context()
    assert context is not None
    return context.trace_id, context.span_id


def parent_ids(span: ReadableSpan) -> tuple[int, int] | None:
    return None if span.parent is None else (span.parent.trace_id, span.parent.span_id)


def test_consumer_span_continues_the_producer_trace_when_headers_cross_the_topic(
    span_exporter,
):
    headers = build_headers()
    with process(headers):
        pass

    producer = finished(span_exporter, f"send {TOPIC}")
    consumer = finished(span_exporter, f"process {TOPIC}")
    assert ids(consumer)[0] == ids(producer)[0]
    assert parent_ids(consumer) == ids(producer)
    assert consumer.parent is not None
    assert consumer.parent.is_remote


def test_send_span_is_a_producer_with_messaging_attributes_when_sending(span_exporter):
    build_headers()

    span = finished(span_exporter, f"send {TOPIC}")
    assert span.kind is SpanKind.PRODUCER
    assert dict(span.attributes or {}) == {
        "messaging.system": "kafka",
        "messaging.destination.name": TOPIC,
        "messaging.operation.type": "send",
        "messaging.operation.name": "send",
        "messaging.message.id": "e-1",
        "messaging.kafka.message.key": "ns/a",
        "vcbus.event_type": "job.admitted.v1",
    }


def test_send_span_is_a_child_of_the_current_span_when_a_handler_sends(span_exporter):
    with business_span("controller.reconcile"):
        build_headers()

    assert parent_ids(finished(span_exporter, f"send {TOPIC}")) == ids(
        finished(span_exporter, "controller.reconcile")
    )


def test_process_span_is_a_consumer_with_record_coordinates_when_processing(span_exporter):
    with process(build_headers()):
        pass

    span = finished(span_exporter, f"process {TOPIC}")
    assert span.kind is SpanKind.CONSUMER
    assert dict(span.attributes or {}) == {
        "messaging.system": "kafka",
        "messaging.destination.name": TOPIC,
        "messaging.operation.type": "process",
        "messaging.operation.name": "process",
        "messaging.message.id": "e-1",
        "messaging.kafka.message.key": "ns/a",
        "messaging.destination.partition.id": "3",
        "messaging.kafka.offset": 42,
        "messaging.consumer.group.name": "vcbus-job-controller",
        "vcbus.event_type": "job.admitted.v1",
    }


def test_key_and_group_attributes_are_absent_when_they_are_none(span_exporter):
    headers: list[tuple[str, bytes]] = []
    send(headers, key=None)
    with process_span(
        TOPIC,
        partition=0,
        offset=0,
        key=None,
        event_type="job.admitted.v1",
        event_id="e-1",
        headers=headers,
        group=None,
    ):
        pass

    for name in (f"send {TOPIC}", f"process {TOPIC}"):
        attributes = finished(span_exporter, name).attributes or {}
        assert "messaging.kafka.message.key" not in attributes
        assert "messaging.consumer.group.name" not in attributes


def test_process_span_records_the_error_and_reraises_when_the_handler_raises(span_exporter):
    with pytest.raises(ValueError, match="bad replicas"), process(build_headers()):
        raise ValueError("bad replicas")

    span = finished(span_exporter, f"process {TOPIC}")
    assert span.status.status_code is StatusCode.ERROR
    assert span.status.description == "ValueError: bad replicas"
    assert (span.attributes or {})["error.type"] == "ValueError"
    (event,) = span.events
    assert event.name == "exception"
    assert (event.attributes or {})["exception.type"] == "ValueError"


def test_process_span_is_not_an_error_when_the_handler_is_cancelled(span_exporter):
    with pytest.raises(asyncio.CancelledError), process(build_headers()):
        raise asyncio.CancelledError

    span = finished(span_exporter, f"process {TOPIC}")
    assert span.status.status_code is StatusCode.UNSET
    assert span.events == ()


def test_process_span_starts_a_new_trace_when_headers_carry_no_context(span_exporter):
    with process([("event-type", b"job.admitted.v1")]):
        pass

    assert finished(span_exporter, f"process {TOPIC}").parent is None


def test_process_span_follows_the_headers_not_the_current_span_when_both_exist(span_exporter):
    headers = build_headers()
    with business_span("unrelated"), process(headers):
        pass

    consumer = finished(span_exporter, f"process {TOPIC}")
    assert parent_ids(consumer) == ids(finished(span_exporter, f"send {TOPIC}"))


def test_handler_spans_are_children_of_the_process_span_when_opened_inside_it(span_exporter):
    with process(build_headers()), business_span("admission.validate", job="ns/a", tasks=2):
        pass

    business = finished(span_exporter, "admission.validate")
    assert business.kind is SpanKind.INTERNAL
    assert parent_ids(business) == ids(finished(span_exporter, f"process {TOPIC}"))
    assert dict(business.attributes or {}) == {"vcbus.job": "ns/a", "vcbus.tasks": 2}


def test_cycle_span_is_a_linked_root_when_started_inside_another_span(span_exporter):
    job_a = span_context_of(build_headers())
    job_b = span_context_of(build_headers())
    assert job_a is not None
    assert job_b is not None

    with business_span("outer"), cycle_span("allocator.cycle", [job_a, job_b]):
        pass

    cycle = finished(span_exporter, "allocator.cycle")
    assert cycle.parent is None
    assert ids(cycle)[0] != ids(finished(span_exporter, "outer"))[0]
    assert [(link.context.trace_id, link.context.span_id) for link in cycle.links] == [
        (job_a.trace_id, job_a.span_id),
        (job_b.trace_id, job_b.span_id),
    ]


def test_cycle_span_leaves_out_invalid_and_repeated_links_when_given_them(span_exporter):
    job = span_context_of(build_headers())
    assert job is not None
    invalid = SpanContext(trace_id=0, span_id=0, is_remote=True, trace_flags=TraceFlags(0))

    with cycle_span("enqueue.cycle", [job, invalid, job]):
        pass

    assert len(finished(span_exporter, "enqueue.cycle").links) == 1


def test_job_span_continues_the_job_trace_and_links_the_cycle_when_inside_a_cycle(
    span_exporter,
):
    headers = build_headers()
    job = span_context_of(headers)
    assert job is not None

    with cycle_span("allocator.cycle", [job]):
        with job_span("allocate ns/a", context_of(headers), job="ns/a"):
            inside_job = current_trace_id()
        after_job = current_trace_id()

    cycle = finished(span_exporter, "allocator.cycle")
    allocate = finished(span_exporter, "allocate ns/a")
    assert parent_ids(allocate) == (job.trace_id, job.span_id)
    assert [(link.context.trace_id, link.context.span_id) for link in allocate.links] == [
        ids(cycle)
    ]
    assert dict(allocate.attributes or {}) == {"vcbus.job": "ns/a"}
    assert inside_job == trace.format_trace_id(job.trace_id)
    assert after_job == trace.format_trace_id(ids(cycle)[0])


def test_job_span_has_no_links_when_no_cycle_is_current(span_exporter):
    headers = build_headers()

    with job_span("allocate ns/a", context_of(headers)):
        pass

    assert finished(span_exporter, "allocate ns/a").links == ()


def test_current_trace_id_is_empty_when_no_span_is_current():
    assert current_trace_id() == ""


def test_current_trace_id_is_the_hex_trace_id_when_a_span_is_current(span_exporter):
    with business_span("admission.validate") as span:
        assert current_trace_id() == trace.format_trace_id(span.get_span_context().trace_id)
    assert len(current_trace_id()) == 0


def test_span_context_of_is_none_when_headers_carry_no_context():
    assert span_context_of([("event-type", b"x")]) is None


def test_provider_is_installed_once_when_configured_again(span_exporter):
    provider = trace.get_tracer_provider()
    extra = InMemorySpanExporter()

    assert configure_tracing("another-service", exporter=extra) is provider
    with business_span("admission.validate"):
        pass

    assert [span.name for span in extra.get_finished_spans()] == ["admission.validate"]
    assert [span.name for span in span_exporter.get_finished_spans()] == ["admission.validate"]
    extra.shutdown()

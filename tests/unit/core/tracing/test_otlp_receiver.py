import json
import urllib.error
import urllib.request

import pytest
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import SpanKind, Status, StatusCode

from tests.support.otlp_receiver import OtlpReceiver, ReceivedSpan

TRACE_ID = "5b8efff798038103d269b633813fc60c"


def post(url: str, body: bytes, content_type: str) -> tuple[int, bytes]:
    request = urllib.request.Request(
        url, data=body, method="POST", headers={"Content-Type": content_type}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        with error:
            return error.code, error.read()


def test_spans_are_read_back_when_the_sdk_exports_gzipped_protobuf():
    with OtlpReceiver() as receiver:
        exporter = OTLPSpanExporter(
            endpoint=f"{receiver.endpoint}/v1/traces", compression=Compression.Gzip
        )
        provider = TracerProvider(
            resource=Resource.create({"service.name": "allocator"}), shutdown_on_exit=False
        )
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        tracer = provider.get_tracer("test")
        with (
            tracer.start_as_current_span("allocator.cycle") as cycle,
            tracer.start_as_current_span(
                "allocate ns/a", kind=SpanKind.CLIENT, attributes={"vcbus.pods": 3}
            ) as allocate,
        ):
            allocate.set_status(Status(StatusCode.ERROR))
        provider.shutdown()

        spans = {span.name: span for span in receiver.spans}

    cycle_ids = cycle.get_span_context()
    assert spans["allocate ns/a"] == ReceivedSpan(
        name="allocate ns/a",
        kind="CLIENT",
        trace_id=f"{cycle_ids.trace_id:032x}",
        span_id=f"{allocate.get_span_context().span_id:016x}",
        parent_span_id=f"{cycle_ids.span_id:016x}",
        service_name="allocator",
        attributes={"vcbus.pods": 3},
        links=[],
        status_code="ERROR",
    )
    assert spans["allocator.cycle"].parent_span_id == ""


def test_spans_are_read_back_when_the_body_is_otlp_json():
    body = {
        "resourceSpans": [
            {
                "resource": {
                    "attributes": [{"key": "service.name", "value": {"stringValue": "cluster"}}]
                },
                "scopeSpans": [
                    {
                        "spans": [
                            {
                                "traceId": TRACE_ID,
                                "spanId": "eee19b7ec3c1b174",
                                "parentSpanId": "eee19b7ec3c1b173",
                                "name": "process vcbus.bindings",
                                "kind": 5,
                                "attributes": [
                                    {"key": "messaging.kafka.offset", "value": {"intValue": "9"}},
                                    {"key": "retry", "value": {"boolValue": True}},
                                    {
                                        "key": "nodes",
                                        "value": {
                                            "arrayValue": {"values": [{"stringValue": "n1"}]}
                                        },
                                    },
                                ],
                                "links": [{"traceId": TRACE_ID, "spanId": "eee19b7ec3c1b172"}],
                                "status": {"code": 2},
                            }
                        ]
                    }
                ],
            }
        ]
    }

    with OtlpReceiver() as receiver:
        status, _ = post(
            f"{receiver.endpoint}/v1/traces", json.dumps(body).encode(), "application/json"
        )
        spans = receiver.spans

    assert status == 200
    assert spans == [
        ReceivedSpan(
            name="process vcbus.bindings",
            kind="CONSUMER",
            trace_id=TRACE_ID,
            span_id="eee19b7ec3c1b174",
            parent_span_id="eee19b7ec3c1b173",
            service_name="cluster",
            attributes={"messaging.kafka.offset": 9, "retry": True, "nodes": ["n1"]},
            links=[(TRACE_ID, "eee19b7ec3c1b172")],
            status_code="ERROR",
        )
    ]


@pytest.mark.parametrize(
    ("path", "body", "expected"),
    [("/v1/metrics", b"", 404), ("/v1/traces", b"{not json", 400)],
    ids=["other-path", "bad-body"],
)
def test_request_is_refused_when_path_or_body_is_wrong(path, body, expected):
    with OtlpReceiver() as receiver:
        status, _ = post(f"{receiver.endpoint}{path}", body, "application/json")
        spans = receiver.spans

    assert status == expected
    assert spans == []


def test_wait_for_is_true_when_the_spans_have_arrived():
    with OtlpReceiver() as receiver:
        provider = TracerProvider(shutdown_on_exit=False)
        provider.add_span_processor(
            SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{receiver.endpoint}/v1/traces"))
        )
        with provider.get_tracer("test").start_as_current_span("enqueue.cycle"):
            pass
        provider.shutdown()

        assert receiver.wait_for(lambda spans: [s.name for s in spans] == ["enqueue.cycle"], 10)


def test_wait_for_is_false_when_the_spans_never_arrive():
    with OtlpReceiver() as receiver:
        assert not receiver.wait_for(lambda spans: len(spans) > 0, timeout=0.05)

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, TraceState

from vcbus.core.tracing import HEADERS_GETTER, extract, inject

TRACE_ID = 0x0AF7651916CD43DD8448EB211C80319C
SPAN_ID = 0xB7AD6B7169203331
TRACEPARENT = b"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def build_context(trace_state: TraceState | None = None) -> Context:
    span_context = SpanContext(
        trace_id=TRACE_ID,
        span_id=SPAN_ID,
        is_remote=False,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
        trace_state=trace_state,
    )
    return trace.set_span_in_context(NonRecordingSpan(span_context))


def remote_span_context(context: Context) -> SpanContext:
    return trace.get_current_span(context).get_span_context()


def test_headers_carry_w3c_traceparent_when_context_is_injected():
    headers: list[tuple[str, bytes]] = [("event-type", b"job.admitted.v1")]

    inject(headers, build_context())

    assert headers == [("event-type", b"job.admitted.v1"), ("traceparent", TRACEPARENT)]


def test_extracted_context_is_the_injected_span_when_headers_round_trip():
    headers: list[tuple[str, bytes]] = []
    inject(headers, build_context(TraceState([("vendor", "value")])))

    extracted = remote_span_context(extract(headers))

    assert (extracted.trace_id, extracted.span_id) == (TRACE_ID, SPAN_ID)
    assert extracted.is_remote
    assert extracted.trace_state == TraceState([("vendor", "value")])


def test_old_trace_headers_are_replaced_when_context_is_injected_again():
    headers: list[tuple[str, bytes]] = [
        ("traceparent", b"00-11111111111111111111111111111111-2222222222222222-01"),
        ("tracestate", b"stale=1"),
        ("event-id", b"e-1"),
    ]

    inject(headers, build_context())

    assert headers == [("event-id", b"e-1"), ("traceparent", TRACEPARENT)]


def test_nothing_is_written_when_no_span_is_current():
    headers: list[tuple[str, bytes]] = [("event-id", b"e-1")]

    inject(headers)

    assert headers == [("event-id", b"e-1")]


def test_extracted_context_is_empty_when_traceparent_is_malformed():
    headers = [("traceparent", b"not-a-traceparent")]

    assert not remote_span_context(extract(headers)).is_valid


def test_extracted_context_is_empty_when_headers_have_no_traceparent():
    assert not remote_span_context(extract([("event-type", b"x")])).is_valid


def test_header_names_match_regardless_of_case_when_read():
    headers = [("TraceParent", TRACEPARENT)]

    assert HEADERS_GETTER.get(headers, "traceparent") == [TRACEPARENT.decode()]
    assert remote_span_context(extract(headers)).trace_id == TRACE_ID

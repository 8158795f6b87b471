"""The router runs each handler in its record's ``process`` span, which names the handler."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from vcbus.contracts import Event, JobDeleteAccepted, Topic, job_key
from vcbus.core.bus.envelope import Envelope
from vcbus.core.bus.outbox import Outbox
from vcbus.core.bus.records import Record
from vcbus.core.bus.router import Route, Router

PREFIX = "unit."
NOW = datetime(2026, 3, 1, tzinfo=UTC)


def _record(offset: int = 0) -> Record:
    return Record(f"{PREFIX}{Topic.JOBS_SUBMITTED}", 0, offset, b"ns/a", b"a")


async def _answer(envelope: Envelope[bytes]) -> Sequence[Event]:
    return [JobDeleteAccepted(event_id="id-a", occurred_at=NOW, job=job_key("ns", "a"))]


def _router(route: Route) -> Router:
    return Router("echo", [route], prefix=PREFIX, attempts=2, group="unit-echo")


async def test_handler_outputs_are_sent_from_the_process_span_naming_the_handler(
    spans: InMemorySpanExporter,
) -> None:
    router = _router(Route(Topic.JOBS_SUBMITTED, _answer, "echo.answer", raw=True))

    outbox = Outbox(PREFIX)
    await router.dispatch_batch([_record()], outbox)
    outbox.take()

    finished = {span.name: span for span in spans.get_finished_spans()}
    process = finished[f"process {PREFIX}{Topic.JOBS_SUBMITTED}"]
    send = finished[f"send {PREFIX}{Topic.JOBS_ADMITTED}"]
    assert set(finished) == {process.name, send.name}
    assert process.kind is SpanKind.CONSUMER
    assert process.attributes is not None
    assert process.attributes["vcbus.handler"] == "echo.answer"
    assert send.parent is not None
    assert send.parent.span_id == process.context.span_id


async def test_failed_attempt_is_an_exception_event_of_the_process_span_when_retried(
    spans: InMemorySpanExporter,
) -> None:
    calls: list[int] = []

    async def flaky(envelope: Envelope[bytes]) -> Sequence[Event]:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("first attempt fails")
        return await _answer(envelope)

    router = _router(Route(Topic.JOBS_SUBMITTED, flaky, "echo.answer", raw=True))
    outbox = Outbox(PREFIX)

    await router.dispatch_batch([_record()], outbox)

    (process,) = [s for s in spans.get_finished_spans() if s.name.startswith("process ")]
    (event,) = process.events
    assert event.name == "exception"
    assert event.attributes is not None
    assert event.attributes["vcbus.attempt"] == 1
    assert len(outbox) == 1


async def _answer_per_record(envelope: Envelope[bytes]) -> Sequence[Event]:
    key = envelope.key or ""
    return [
        JobDeleteAccepted(
            event_id=f"id-{key}-{envelope.offset}", occurred_at=NOW, job=job_key("ns", key)
        )
    ]


def _keyed(offset: int, key: bytes, traceparent: bytes | None = None) -> Record:
    headers = () if traceparent is None else (("traceparent", traceparent),)
    return Record(f"{PREFIX}{Topic.JOBS_SUBMITTED}", 0, offset, key, b"a", headers)


TRACE_A = b"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
TRACE_B = b"00-1bf7651916cd43dd8448eb211c80319c-c7ad6b7169203331-01"


def _processes(spans: InMemorySpanExporter) -> dict[int, ReadableSpan]:
    return {
        s.context.trace_id: s for s in spans.get_finished_spans() if s.name.startswith("process ")
    }


def _trace_id(traceparent: bytes) -> int:
    return int(traceparent.split(b"-")[1], 16)


async def test_a_batch_has_one_process_span_per_trace_and_one_send_span_per_topic_and_span(
    spans: InMemorySpanExporter,
) -> None:
    router = _router(Route(Topic.JOBS_SUBMITTED, _answer_per_record, "echo.answer", raw=True))
    outbox = Outbox(PREFIX)

    await router.dispatch_batch(
        [_keyed(0, b"a", TRACE_A), _keyed(1, b"b", TRACE_B), _keyed(2, b"c", TRACE_A)], outbox
    )
    records = outbox.take()

    processes = _processes(spans)
    assert set(processes) == {_trace_id(TRACE_A), _trace_id(TRACE_B)}
    batched, single = processes[_trace_id(TRACE_A)], processes[_trace_id(TRACE_B)]
    assert dict(batched.attributes or {})["messaging.batch.message_count"] == 2
    assert "messaging.kafka.offset" not in dict(batched.attributes or {})
    assert dict(single.attributes or {})["messaging.kafka.message.key"] == "b"
    assert dict(single.attributes or {})["messaging.kafka.offset"] == 1
    sends = [s for s in spans.get_finished_spans() if s.name.startswith("send ")]
    by_parent = {s.parent.span_id: s for s in sends if s.parent is not None}
    assert set(by_parent) == {batched.context.span_id, single.context.span_id}
    assert (
        dict(by_parent[batched.context.span_id].attributes or {})["messaging.batch.message_count"]
        == 2
    )
    # every record carries the context of the send span it went in
    carried = {dict(r.headers)["traceparent"].split(b"-")[2] for r in records}
    assert carried == {f"{s.context.span_id:016x}".encode() for s in sends}


async def test_records_without_a_trace_context_get_a_process_span_per_key(
    spans: InMemorySpanExporter,
) -> None:
    router = _router(Route(Topic.JOBS_SUBMITTED, _answer_per_record, "echo.answer", raw=True))

    await router.dispatch_batch([_keyed(0, b"a"), _keyed(1, b"b"), _keyed(2, b"a")], Outbox(PREFIX))

    processes = [s for s in spans.get_finished_spans() if s.name.startswith("process ")]
    counts = sorted(
        int(str(dict(s.attributes or {}).get("messaging.batch.message_count", 1)))
        for s in processes
    )
    assert counts == [1, 2]
    assert len({s.context.trace_id for s in processes}) == 2

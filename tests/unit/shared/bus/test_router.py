"""The router runs each handler in its record's ``process`` span, which names the handler."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from contracts import Event, JobDeleteAccepted, Topic, job_key
from shared.bus.envelope import Envelope
from shared.bus.outbox import Outbox
from shared.bus.records import Record
from shared.bus.router import Route, Router

PREFIX = "unit."
NOW = datetime(2026, 3, 1, tzinfo=UTC)


def _record(offset: int = 0) -> Record:
    return Record(f"{PREFIX}{Topic.JOBS_SUBMITTED}", 0, offset, b"ns/a", b"a")


async def _answer(envelope: Envelope[bytes]) -> Sequence[Event]:
    return [JobDeleteAccepted(event_id="id-a", occurred_at=NOW, job_key=job_key("ns", "a"))]


def _router(route: Route) -> Router:
    return Router("echo", [route], prefix=PREFIX, attempts=2, group="unit-echo")


async def test_handler_outputs_are_sent_from_the_process_span_naming_the_handler(
    spans: InMemorySpanExporter,
) -> None:
    router = _router(Route(Topic.JOBS_SUBMITTED, _answer, "echo.answer", raw=True))

    await router.dispatch(_record(), Outbox(PREFIX))

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

    await router.dispatch(_record(), outbox)

    (process,) = [s for s in spans.get_finished_spans() if s.name.startswith("process ")]
    (event,) = process.events
    assert event.name == "exception"
    assert event.attributes is not None
    assert event.attributes["vcbus.attempt"] == 1
    assert len(outbox) == 1

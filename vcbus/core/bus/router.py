"""Router: decode a record, run its handler inside the standard middleware, collect outputs.

The middleware stack, outermost first: the ``process <topic>`` span (named after the
messaging conventions, with the route's business name as ``vcbus.handler``; one span per
topic and trace in a batch, that is per job, current while each of its records is
handled, counting them in ``messaging.batch.message_count``; records without a trace
context get one per key), the log
context, the error policy (retries, each failed attempt an ``exception`` event of the span;
then the dead-letter topic), timing, and the handler, which runs in the ``process`` span:
the handler's outputs are sent from it. Each handled record is logged as
``record_handled`` at debug level (the delivery loop logs each batch at info); retries and
dead letters at warning and error.
A record of several events (``batch``) is handled event by event, each with its own id
in the log context; a handler that keeps failing on one of them dead-letters that event
alone (``batch.single``), and the others are handled.
A record never stops the consumer: undecodable records, records whose handler keeps
failing, and records whose answer could never be written (over the 1 MiB record limit,
docs/design.md#bounded-records; no retry) go to ``<topic>.DLT``; records of unknown types are
skipped.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, cast

import structlog
from opentelemetry import trace
from opentelemetry.semconv._incubating.attributes.messaging_attributes import (
    MESSAGING_BATCH_MESSAGE_COUNT,
)
from opentelemetry.trace import Span, Status, StatusCode

from vcbus.contracts._base import Event
from vcbus.contracts.topics import TOPIC_SPECS, Topic
from vcbus.core.bus.batch import single
from vcbus.core.bus.codec import Poison, TopicCodec, Unknown
from vcbus.core.bus.dead_letter import dead_letter
from vcbus.core.bus.envelope import HEADER_EVENT_ID, HEADER_EVENT_TYPE, Envelope
from vcbus.core.bus.errors import RecordRefusedError
from vcbus.core.bus.outbox import Outbox
from vcbus.core.bus.records import Record
from vcbus.core.logging.processors import record_context
from vcbus.core.tracing.propagation import TRACEPARENT
from vcbus.core.tracing.spans import describe_record, start_process_span

Handler = Callable[[Envelope[Any]], Awaitable[Sequence[Event]]]

log = structlog.get_logger("vcbus.bus")


@dataclass(frozen=True, slots=True)
class Route:
    """Records of ``topic`` go to ``handler``, in a ``process`` span naming it ``span``.

    With ``raw``, the handler gets the record's bytes as the event (for ``jobs.submitted``,
    whose values are Job manifests as users wrote them).
    """

    topic: Topic
    handler: Handler
    span: str
    raw: bool = False


class Router:
    """Dispatches records of a service's topics to their routes."""

    def __init__(
        self, service: str, routes: Sequence[Route], *, prefix: str, attempts: int, group: str
    ) -> None:
        self.service = service
        self.prefix = prefix
        self.attempts = attempts
        self.group = group
        self._routes = {f"{prefix}{route.topic}": route for route in routes}
        self._codecs: dict[str, TopicCodec[Event]] = {
            f"{prefix}{route.topic}": TopicCodec(TOPIC_SPECS[route.topic].union) for route in routes
        }

    @property
    def topics(self) -> list[str]:
        """Broker-side names of the routed topics."""
        return sorted(self._routes)

    async def dispatch_batch(self, records: Sequence[Record], outbox: Outbox) -> None:
        """Handle a batch's records in order; their outputs (or dead letters) go to ``outbox``.

        One ``process`` span per topic and trace serves the batch's records of one job.
        """
        spans: dict[tuple[str, bytes], _Processing] = {}
        try:
            for record in records:
                await self._dispatch(record, outbox, spans)
        finally:
            for processing in spans.values():
                processing.end()

    async def _dispatch(
        self,
        record: Record,
        outbox: Outbox,
        spans: dict[tuple[str, bytes], _Processing],
    ) -> None:
        route = self._routes[record.topic]
        key = record.key.decode("utf-8", "replace") if record.key is not None else None
        event_type = (record.header(HEADER_EVENT_TYPE) or b"").decode("utf-8", "replace")
        event_id = (record.header(HEADER_EVENT_ID) or b"").decode("utf-8", "replace")
        parent = record.header(TRACEPARENT)
        # one span per topic and trace (the trace id of ``00-<trace id>-<span id>-<flags>``)
        shared_by = (
            record.topic,
            parent[3:35] if parent is not None else b"key:" + (record.key or b""),
        )
        processing = spans.get(shared_by)
        if processing is None:
            span = start_process_span(
                record.topic, headers=record.headers, group=self.group, handler=route.span
            )
            processing = spans[shared_by] = _Processing(
                span, (record.partition, record.offset, key, event_type, event_id)
            )
        else:
            processing.count += 1
        span = processing.span
        with trace.use_span(span, end_on_exit=False):
            events: Sequence[object]
            if route.raw:
                events = (record.value or b"",)
            else:
                decoded = self._codecs[record.topic].decode_all(record.value)
                if isinstance(decoded, Unknown | Poison):
                    with self._context(route, record, key, event_type, event_id):
                        self._undecoded(record, decoded, outbox, span)
                    return
                events = decoded
            alone = len(events) == 1
            for event in events:
                one = event_id if alone else cast(Event, event).event_id
                with self._context(route, record, key, event_type, one):
                    await self._handle(
                        route, record, key, event, outbox=outbox, span=span, alone=alone
                    )

    def _context(
        self, route: Route, record: Record, key: str | None, event_type: str, event_id: str
    ) -> AbstractContextManager[None]:
        """The log context of one event of ``record`` (``event_id``: that event's)."""
        return record_context(
            service=self.service,
            topic=str(route.topic),
            partition=record.partition,
            offset=record.offset,
            event_type=event_type,
            event_id=event_id,
            job=key,
        )

    def _undecoded(
        self, record: Record, decoded: Unknown | Poison, outbox: Outbox, span: Span
    ) -> None:
        """Skip a record of an unknown type; dead-letter one that does not decode."""
        if isinstance(decoded, Unknown):
            log.info("record_skipped", reason="unknown event type", type=decoded.type)
            return
        outbox.add_record(dead_letter(record, decoded.error, service=self.service), source=record)
        span.set_attribute("vcbus.dead_lettered", True)
        log.warning("record_dead_lettered", error=decoded.error)

    async def _handle(
        self,
        route: Route,
        record: Record,
        key: str | None,
        event: object,
        *,
        outbox: Outbox,
        span: Span,
        alone: bool,
    ) -> None:
        """Run one event of ``record`` through its handler: retries, then its dead letter.

        Unless the event is ``alone`` in its record, its dead letter is a record of that
        event only (``batch.single``): the record's other events are handled as usual.
        """
        envelope = Envelope(
            str(route.topic), key, event, record.partition, record.offset, record.headers
        )
        started = time.perf_counter()
        for attempt in range(1, self.attempts + 1):
            try:
                emitted = await route.handler(envelope)
                outbox.add_events(emitted, source=record)
            except RecordRefusedError as exc:
                # An answer that can never be written: the same input gives it again.
                letter = record if alone else single(record, event)  # type: ignore[arg-type]
                self._dead_letter(
                    letter, str(exc), exc, outbox, span, attempts=attempt, source=record
                )
                return
            except Exception as exc:  # noqa: BLE001 - the error policy: retry, then dead-letter
                if attempt < self.attempts:
                    span.record_exception(exc, attributes={"vcbus.attempt": attempt})
                    log.warning("handler_retried", attempt=attempt, error=repr(exc))
                    continue
                reason = "".join(traceback.format_exception(exc))
                letter = record if alone else single(record, event)  # type: ignore[arg-type]
                self._dead_letter(
                    letter, reason, exc, outbox, span, attempts=attempt, source=record
                )
                return
            # the canonical line per record is at debug; the delivery loop writes one
            # per batch at info (``batch_handled``)
            log.debug(
                "record_handled",
                emitted=len(emitted),
                duration_ms=round((time.perf_counter() - started) * 1000, 3),
            )
            return

    def _dead_letter(
        self,
        record: Record,
        reason: str,
        exc: Exception,
        outbox: Outbox,
        span: Span,
        *,
        attempts: int,
        source: Record,
    ) -> None:
        outbox.add_record(dead_letter(record, reason, service=self.service), source=source)
        span.set_attribute("vcbus.dead_lettered", True)
        span.set_status(Status(StatusCode.ERROR, repr(exc)))
        span.record_exception(exc)
        log.error("record_dead_lettered", error=repr(exc), attempts=attempts)


class _Processing:
    """The ``process`` span of one topic and trace in a batch, and how many records it took."""

    __slots__ = ("count", "first", "span")

    def __init__(self, span: Span, first: tuple[int, int, str | None, str, str]) -> None:
        self.span = span
        self.first = first
        self.count = 1

    def end(self) -> None:
        """End the span: the record's attributes if it took one, else how many it took."""
        if self.count == 1:
            partition, offset, key, event_type, event_id = self.first
            describe_record(
                self.span,
                partition=partition,
                offset=offset,
                key=key,
                event_type=event_type,
                event_id=event_id,
            )
        else:
            self.span.set_attribute(MESSAGING_BATCH_MESSAGE_COUNT, self.count)
        self.span.end()

"""The spans of vcbus, written by hand after the OpenTelemetry messaging conventions.

``send <topic>`` (PRODUCER) injects its context into the record headers; ``process <topic>``
(CONSUMER) continues it, so producer and consumer share one trace. In a service's batch one
``send`` span covers the records made under one span for one topic (``SendSpans``) and one
``process`` span the records of one topic and trace (the router); a span of several
records counts them in ``messaging.batch.message_count``. Business spans are
children of the current span. A cycle is a root span linked to the jobs it serves, and
``job_span`` continues one job's trace inside it, linking back to the cycle.

Keyword attributes of ``business_span`` and ``job_span`` are named ``vcbus.<name>``:
``business_span("admission.validate", job="ns/a")`` sets ``vcbus.job``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.semconv._incubating.attributes import messaging_attributes as messaging
from opentelemetry.semconv.attributes.error_attributes import ERROR_TYPE
from opentelemetry.trace import Link, Span, SpanContext, SpanKind
from opentelemetry.util.types import Attributes, AttributeValue

from vcbus.core.tracing.propagation import extract, inject

ATTR_EVENT_TYPE = "vcbus.event_type"
ATTR_HANDLER = "vcbus.handler"
ATTR_JOB = "vcbus.job"
MESSAGING_SYSTEM = "kafka"

_tracer = trace.get_tracer("vcbus")


@contextmanager
def send_span(
    topic: str,
    *,
    key: str | None,
    event_type: str,
    event_id: str,
    headers: list[tuple[str, bytes]],
) -> Iterator[Span]:
    """Open the PRODUCER span ``send <topic>`` and put its context into ``headers``.

    Args:
        topic: The destination topic, with its prefix.
        key: The record key, or None for a keyless record.
        event_type: The event's tag, e.g. ``job.admitted.v1``.
        event_id: The event's deterministic id.
        headers: The record's headers; ``traceparent``/``tracestate`` are written on entry.

    Yields:
        The span, current while the record is sent.
    """
    attributes = _operation_attributes(topic, "send") | _single_attributes(
        key, event_type, event_id
    )
    with _tracer.start_as_current_span(
        f"send {topic}", kind=SpanKind.PRODUCER, attributes=attributes
    ) as span:
        inject(headers, trace.set_span_in_context(span))
        yield span


class SendSpans:
    """``send <topic>`` PRODUCER spans shared by the records a batch sends, until closed.

    Records made under the same span (a ``process`` span, a cycle's job span, a timer's
    remembered job context) for the same topic share one ``send`` span: its context goes
    into each record's headers, and the span says how many it sent
    (``messaging.batch.message_count``), or, for a single record, its key, id and type.
    (A span per record was about half of a reactor's time under cProfile.) Records made
    under no span share one only when they have the same key, so traces of different jobs
    never merge.
    """

    __slots__ = ("_open",)

    def __init__(self) -> None:
        self._open: dict[tuple[str, int | str | None], _Send] = {}

    def headers(
        self, topic: str, *, key: str | None, event_type: str, event_id: str
    ) -> tuple[tuple[str, bytes], ...]:
        """The trace headers for a record to ``topic``, under the current span.

        Args:
            topic: The destination topic, with its prefix.
            key: The record key, or None for a keyless record.
            event_type: The event's tag, e.g. ``job.admitted.v1``.
            event_id: The event's deterministic id.

        Returns:
            ``traceparent`` (and ``tracestate``) of the ``send`` span the record goes in.
        """
        parent = trace.get_current_span().get_span_context()
        group = (topic, parent.span_id if parent.is_valid else key)
        held = self._open.get(group)
        if held is None:
            span = _tracer.start_span(
                f"send {topic}",
                kind=SpanKind.PRODUCER,
                attributes=_operation_attributes(topic, "send"),
            )
            headers: list[tuple[str, bytes]] = []
            inject(headers, trace.set_span_in_context(span))
            held = self._open[group] = _Send(span, tuple(headers), (key, event_type, event_id))
        held.count += 1
        return held.headers

    def close(self) -> None:
        """End every open span (once the batch's records are made)."""
        for held in self._open.values():
            if held.count == 1:
                key, event_type, event_id = held.first
                held.span.set_attributes(_single_attributes(key, event_type, event_id))
            else:
                held.span.set_attribute(messaging.MESSAGING_BATCH_MESSAGE_COUNT, held.count)
            held.span.end()
        self._open.clear()


class _Send:
    __slots__ = ("count", "first", "headers", "span")

    def __init__(
        self,
        span: Span,
        headers: tuple[tuple[str, bytes], ...],
        first: tuple[str | None, str, str],
    ) -> None:
        self.span = span
        self.headers = headers
        self.first = first
        self.count = 0


def _operation_attributes(topic: str, operation: str) -> dict[str, AttributeValue]:
    return {
        messaging.MESSAGING_SYSTEM: MESSAGING_SYSTEM,
        messaging.MESSAGING_DESTINATION_NAME: topic,
        messaging.MESSAGING_OPERATION_TYPE: operation,
        messaging.MESSAGING_OPERATION_NAME: operation,
    }


def _single_attributes(
    key: str | None, event_type: str, event_id: str
) -> dict[str, AttributeValue]:
    attributes: dict[str, AttributeValue] = {
        messaging.MESSAGING_MESSAGE_ID: event_id,
        ATTR_EVENT_TYPE: event_type,
    }
    if key is not None:
        attributes[messaging.MESSAGING_KAFKA_MESSAGE_KEY] = key
    return attributes


def start_process_span(
    topic: str, *, headers: Sequence[tuple[str, bytes]], group: str | None, handler: str | None
) -> Span:
    """Start the CONSUMER span ``process <topic>`` as a child of the producer's context.

    The span is not made current, and its record's attributes are set by
    :func:`describe_record` (one record) or the batch's count (several); the caller ends it.

    Args:
        topic: The topic the record came from.
        headers: The (first) record's headers, read for ``traceparent``/``tracestate``.
        group: The consumer group, or None when consuming without one.
        handler: What handles the record (``controller.reconcile``), set as
            ``vcbus.handler``.

    Returns:
        The started span.
    """
    attributes = _operation_attributes(topic, "process")
    if group is not None:
        attributes[messaging.MESSAGING_CONSUMER_GROUP_NAME] = group
    if handler is not None:
        attributes[ATTR_HANDLER] = handler
    return _tracer.start_span(
        f"process {topic}", context=extract(headers), kind=SpanKind.CONSUMER, attributes=attributes
    )


def describe_record(
    span: Span, *, partition: int, offset: int, key: str | None, event_type: str, event_id: str
) -> None:
    """Set the attributes of the one record a ``process`` span handled."""
    attributes = _single_attributes(key, event_type, event_id)
    attributes[messaging.MESSAGING_DESTINATION_PARTITION_ID] = str(partition)
    attributes[messaging.MESSAGING_KAFKA_OFFSET] = offset
    span.set_attributes(attributes)


@contextmanager
def process_span(
    topic: str,
    *,
    partition: int,
    offset: int,
    key: str | None,
    event_type: str,
    event_id: str,
    headers: Sequence[tuple[str, bytes]],
    group: str | None,
    handler: str | None = None,
) -> Iterator[Span]:
    """Open the CONSUMER span ``process <topic>`` as a child of the producer's context.

    An exception from the body is recorded on the span, sets its status to ERROR and its
    ``error.type``, and is re-raised.

    Args:
        topic: The topic the record came from.
        partition: The record's partition.
        offset: The record's offset.
        key: The record key, or None for a keyless record.
        event_type: The event's tag.
        event_id: The event's id.
        headers: The record's headers, read for ``traceparent``/``tracestate``.
        group: The consumer group, or None when consuming without one.
        handler: What handles the record (``controller.reconcile``), set as
            ``vcbus.handler``; the handler runs in this span (no span of its own: a span
            per record less, about 18 µs).

    Yields:
        The span, current while the handler runs.

    Raises:
        Exception: Whatever the body raised, after it is recorded.
    """
    span = start_process_span(topic, headers=headers, group=group, handler=handler)
    describe_record(
        span, partition=partition, offset=offset, key=key, event_type=event_type, event_id=event_id
    )
    with trace.use_span(span, end_on_exit=True, record_exception=True):
        try:
            yield span
        except Exception as exc:
            span.set_attribute(ERROR_TYPE, type(exc).__qualname__)
            raise


@contextmanager
def business_span(name: str, **attributes: str | int | float | bool) -> Iterator[Span]:
    """Open an INTERNAL child of the current span, such as ``admission.validate``.

    Args:
        name: ``<stage>.<verb>``.
        **attributes: Set as ``vcbus.<name>``.

    Yields:
        The span, current in the body.
    """
    with _tracer.start_as_current_span(name, attributes=_vcbus_attributes(attributes)) as span:
        yield span


@contextmanager
def cycle_span(name: str, links: Sequence[SpanContext]) -> Iterator[Span]:
    """Open a ROOT span for a scheduling cycle, linked to the jobs it serves.

    Args:
        name: ``enqueue.cycle`` or ``allocator.cycle``.
        links: The span contexts of the last event of every job served; invalid ones and
            repeats are left out.

    Yields:
        The span, current in the body.
    """
    unique = {(link.trace_id, link.span_id): link for link in links if link.is_valid}
    with _tracer.start_as_current_span(
        name, context=Context(), links=[Link(link) for link in unique.values()]
    ) as span:
        yield span


@contextmanager
def job_span(name: str, parent: Context, **attributes: str | int | float | bool) -> Iterator[Span]:
    """Open a span continuing a job's trace inside a cycle, e.g. ``allocate <job>``.

    The span's parent is the job's context; the current span (the cycle) is linked.

    Args:
        name: The span name.
        parent: The job's context, e.g. ``context_of(headers)`` of its last event.
        **attributes: Set as ``vcbus.<name>``.

    Yields:
        The span, current in the body.
    """
    cycle = trace.get_current_span().get_span_context()
    links = [Link(cycle)] if cycle.is_valid else []
    with _tracer.start_as_current_span(
        name, context=parent, links=links, attributes=_vcbus_attributes(attributes)
    ) as span:
        yield span


def current_trace_id() -> str:
    """Return the trace id of the current span.

    Returns:
        32 lowercase hex characters, or ``""`` when no valid span is current.
    """
    span_context = trace.get_current_span().get_span_context()
    return trace.format_trace_id(span_context.trace_id) if span_context.is_valid else ""


def context_of(headers: Sequence[tuple[str, bytes]]) -> Context:
    """Return the trace context carried by a record's headers.

    Args:
        headers: The record's headers.

    Returns:
        The context to continue, empty when the headers carry none.
    """
    return extract(headers)


def span_context_of(headers: Sequence[tuple[str, bytes]]) -> SpanContext | None:
    """Return the span context carried by a record's headers, for links.

    Args:
        headers: The record's headers.

    Returns:
        The remote span context, or None when the headers carry no valid one.
    """
    span_context = trace.get_current_span(extract(headers)).get_span_context()
    return span_context if span_context.is_valid else None


def _vcbus_attributes(attributes: dict[str, str | int | float | bool]) -> Attributes:
    return {f"vcbus.{name}": value for name, value in attributes.items()}

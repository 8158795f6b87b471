"""W3C trace context carried in Kafka record headers (``list[tuple[str, bytes]]``)."""

from __future__ import annotations

from collections.abc import Sequence

from opentelemetry.context import Context
from opentelemetry.propagators.textmap import Getter, Setter
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

TRACEPARENT = "traceparent"
TRACESTATE = "tracestate"

_PROPAGATOR = TraceContextTextMapPropagator()


class KafkaHeadersGetter(Getter[Sequence[tuple[str, bytes]]]):
    """Reads propagation fields from Kafka headers; names match case-insensitively."""

    def get(self, carrier: Sequence[tuple[str, bytes]], key: str) -> list[str] | None:
        """Return every value of the header ``key``, decoded as UTF-8.

        Args:
            carrier: The record's headers.
            key: The propagation field, e.g. ``traceparent``.

        Returns:
            The decoded values in header order, or None when the header is absent.
        """
        wanted = key.lower()
        values = [
            value.decode("utf-8", errors="replace")
            for name, value in carrier
            if name.lower() == wanted
        ]
        return values or None

    def keys(self, carrier: Sequence[tuple[str, bytes]]) -> list[str]:
        """Return the header names.

        Args:
            carrier: The record's headers.

        Returns:
            Every header name, in order.
        """
        return [name for name, _ in carrier]


class KafkaHeadersSetter(Setter[list[tuple[str, bytes]]]):
    """Writes a propagation field into Kafka headers, replacing any earlier value."""

    def set(self, carrier: list[tuple[str, bytes]], key: str, value: str) -> None:
        """Replace every header named ``key`` with one header holding ``value``.

        Args:
            carrier: The record's headers, changed in place.
            key: The propagation field, e.g. ``traceparent``.
            value: Its text value, stored as UTF-8.
        """
        _remove(carrier, key)
        carrier.append((key, value.encode("utf-8")))


HEADERS_GETTER = KafkaHeadersGetter()
HEADERS_SETTER = KafkaHeadersSetter()


def inject(headers: list[tuple[str, bytes]], context: Context | None = None) -> None:
    """Write ``traceparent`` and ``tracestate`` for a context into the headers.

    Earlier values of both headers are removed first, so a record re-sent under a new span
    never carries two parents or a stale ``tracestate``. Other headers are kept.

    Args:
        headers: The record's headers, changed in place.
        context: The context to propagate; the current context when None.
    """
    _remove(headers, TRACEPARENT)
    _remove(headers, TRACESTATE)
    _PROPAGATOR.inject(headers, context, HEADERS_SETTER)


def extract(headers: Sequence[tuple[str, bytes]]) -> Context:
    """Read the W3C trace context from the headers.

    Args:
        headers: The record's headers.

    Returns:
        A context whose current span is the remote parent, or an empty context when the
        headers carry no valid ``traceparent``.
    """
    return _PROPAGATOR.extract(headers, Context(), HEADERS_GETTER)


def _remove(headers: list[tuple[str, bytes]], key: str) -> None:
    wanted = key.lower()
    headers[:] = [(name, value) for name, value in headers if name.lower() != wanted]

"""structlog processors that put the service, the record, the span and no secrets on lines."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from typing import Final

from opentelemetry import trace
from structlog.typing import EventDict, Processor, WrappedLogger

from vcbus.core.printable import printable

REDACTED: Final = "***"

# Parts of key names whose values are secret: passwords (sasl_plain_password included),
# tokens, API keys, and TLS private-key material (ssl_keyfile, ssl_key_password, ...).
SECRET_KEY_PARTS: Final = (
    "password",
    "passwd",
    "secret",
    "token",
    "credential",
    "authorization",
    "api_key",
    "apikey",
    "private_key",
    "ssl_key",
    "keyfile",
)


def add_trace_context(
    _logger: WrappedLogger, _method_name: str, event_dict: EventDict
) -> EventDict:
    """Add ``trace_id`` and ``span_id`` (lowercase hex) of the current valid span.

    Values already on the line are kept, so a caller can name another trace on purpose.
    Without a valid current span, the line is left as it is.

    Args:
        _logger: The wrapped logger (unused).
        _method_name: The log method's name (unused).
        event_dict: The line so far.

    Returns:
        The line, with the ids when a span is current.
    """
    span_context = trace.get_current_span().get_span_context()
    if span_context.is_valid:
        event_dict.setdefault("trace_id", trace.format_trace_id(span_context.trace_id))
        event_dict.setdefault("span_id", trace.format_span_id(span_context.span_id))
    return event_dict


_RECORD: ContextVar[Mapping[str, object] | None] = ContextVar("vcbus_log_record", default=None)
"""The fields of the record being handled, for every line written meanwhile."""


@contextlib.contextmanager
def record_context(**fields: object) -> Iterator[None]:
    """Put ``fields`` on every line written in the block (by :func:`add_record_context`).

    The same as ``structlog.contextvars.bound_contextvars(**fields)`` for the lines, with one
    context variable set instead of one per field: a record's handler binds its topic,
    partition, offset, ids and key for each record, and most records write no line at info.

    Args:
        **fields: Set on each line that has no value of its own for them.

    Yields:
        Nothing; the fields are dropped on exit (those of an enclosing block come back).
    """
    token = _RECORD.set(fields)
    try:
        yield
    finally:
        _RECORD.reset(token)


def add_record_context(
    _logger: WrappedLogger, _method_name: str, event_dict: EventDict
) -> EventDict:
    """Add the fields of the enclosing :func:`record_context`; values on the line are kept.

    Args:
        _logger: The wrapped logger (unused).
        _method_name: The log method's name (unused).
        event_dict: The line so far.

    Returns:
        The line, with the record's fields when a record is being handled.
    """
    fields = _RECORD.get()
    if fields:
        for key, value in fields.items():
            event_dict.setdefault(key, value)
    return event_dict


def add_service(service: str) -> Processor:
    """Build a processor that sets ``service`` on every line that has none.

    Args:
        service: The kebab-case service name.

    Returns:
        The processor.
    """

    def add(_logger: WrappedLogger, _method_name: str, event_dict: EventDict) -> EventDict:
        event_dict.setdefault("service", service)
        return event_dict

    return add


def redact_secrets(_logger: WrappedLogger, _method_name: str, event_dict: EventDict) -> EventDict:
    """Mask the values of secret-looking keys, in nested mappings too.

    A key is secret when its lowercase name contains one of :data:`SECRET_KEY_PARTS`.
    None stays None, so "not set" is still visible.

    Args:
        _logger: The wrapped logger (unused).
        _method_name: The log method's name (unused).
        event_dict: The line so far.

    Returns:
        The line with every secret value replaced by ``***``.
    """
    for key, value in event_dict.items():
        if value is None:
            continue
        if is_secret_key(key):
            event_dict[key] = REDACTED
        elif type(value) not in _PLAIN:
            event_dict[key] = _redacted(key, value)
    return event_dict


_PLAIN: Final = frozenset({str, int, float, bool})
"""Value types that hold no nested secret (the common case, checked first)."""


def is_secret_key(key: object) -> bool:
    """Tell whether a key names a secret.

    Args:
        key: A key of a log line or of a mapping in it.

    Returns:
        True when its lowercase name contains a part of :data:`SECRET_KEY_PARTS`.
    """
    return _is_secret_name(key if type(key) is str else str(key))


@functools.lru_cache(maxsize=4096)
def _is_secret_name(name: str) -> bool:
    # Log lines repeat the same few keys; the answer is remembered per name.
    lowered = name.lower()
    return any(part in lowered for part in SECRET_KEY_PARTS)


def _redacted(key: object, value: object) -> object:
    if value is None:
        return None
    if is_secret_key(key):
        return REDACTED
    if isinstance(value, Mapping):
        return {inner: _redacted(inner, item) for inner, item in value.items()}
    return value


def escape_controls(_logger: WrappedLogger, _method_name: str, event_dict: EventDict) -> EventDict:
    """Escape the control characters of every string on a line meant for a terminal.

    Logged values carry user text (job and queue names, messages); on a console an escape
    sequence in them would drive the terminal. JSON lines escape them already.

    Args:
        _logger: The wrapped logger (unused).
        _method_name: The log method's name (unused).
        event_dict: The line so far.

    Returns:
        The line, each string value (and the event) without control characters but
        newline and tab.
    """
    return {
        key: printable(value) if isinstance(value, str) else value
        for key, value in event_dict.items()
    }

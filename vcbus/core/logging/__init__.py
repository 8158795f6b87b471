"""Structured logging for vcbus: one configuration call and the processors it uses."""

from vcbus.core.logging.processors import (
    REDACTED,
    SECRET_KEY_PARTS,
    add_record_context,
    add_service,
    add_trace_context,
    escape_controls,
    is_secret_key,
    record_context,
    redact_secrets,
)
from vcbus.core.logging.setup import LEVEL_ENV, LEVELS, configure_logging

__all__ = [
    "LEVELS",
    "LEVEL_ENV",
    "REDACTED",
    "SECRET_KEY_PARTS",
    "add_record_context",
    "add_service",
    "add_trace_context",
    "configure_logging",
    "escape_controls",
    "is_secret_key",
    "record_context",
    "redact_secrets",
]

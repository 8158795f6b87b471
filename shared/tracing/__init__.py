"""Tracing for vcbus: the provider, W3C context in Kafka headers, and the spans of the bus."""

from shared.tracing.propagation import (
    HEADERS_GETTER,
    HEADERS_SETTER,
    TRACEPARENT,
    TRACESTATE,
    KafkaHeadersGetter,
    KafkaHeadersSetter,
    extract,
    inject,
)
from shared.tracing.setup import configure_tracing, shutdown_tracing
from shared.tracing.spans import (
    ATTR_EVENT_TYPE,
    ATTR_HANDLER,
    ATTR_JOB,
    MESSAGING_SYSTEM,
    business_span,
    context_of,
    current_trace_id,
    cycle_span,
    job_span,
    process_span,
    record_send_span,
    send_span,
    span_context_of,
)

__all__ = [
    "ATTR_EVENT_TYPE",
    "ATTR_HANDLER",
    "ATTR_JOB",
    "HEADERS_GETTER",
    "HEADERS_SETTER",
    "MESSAGING_SYSTEM",
    "TRACEPARENT",
    "TRACESTATE",
    "KafkaHeadersGetter",
    "KafkaHeadersSetter",
    "business_span",
    "configure_tracing",
    "context_of",
    "current_trace_id",
    "cycle_span",
    "extract",
    "inject",
    "job_span",
    "process_span",
    "record_send_span",
    "send_span",
    "shutdown_tracing",
    "span_context_of",
]

"""The process's tracer provider, configured once from the standard ``OTEL_*`` variables.

``OTEL_TRACES_EXPORTER`` is a comma-separated list of ``otlp`` (OTLP/HTTP protobuf, batched;
the endpoint comes from ``OTEL_EXPORTER_OTLP_ENDPOINT`` or
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``), ``console`` (stdout) and ``none``. It defaults to
``otlp`` when one of those endpoints is set and to ``none`` otherwise. Spans are created
even with ``none``, so trace context still propagates and log lines still carry trace ids.

Exporters given explicitly (tests) replace the environment's choice and are owned by the
caller: ``shutdown_tracing`` flushes them but leaves them attached and running. An SDK
provider installed before the first call (a test harness's) is adopted, not replaced.
"""

from __future__ import annotations

import os
import sys
import threading

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.environment_variables import OTEL_TRACES_EXPORTER
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.environment_variables import (
    OTEL_EXPORTER_OTLP_ENDPOINT,
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
    OTEL_SERVICE_NAME,
)
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SimpleSpanProcessor,
    SpanExporter,
)

_EXPORTERS = ("otlp", "console", "none")

_lock = threading.Lock()
_provider: TracerProvider | None = None
_processors: _Processors | None = None


class _Processors(SpanProcessor):
    """Fans spans out to the attached processors; the ones it owns can be shut down."""

    def __init__(self) -> None:
        self._owned: tuple[SpanProcessor, ...] = ()
        self._borrowed: tuple[SpanProcessor, ...] = ()

    def attach(self, processor: SpanProcessor, *, owned: bool) -> None:
        if owned:
            self._owned = (*self._owned, processor)
        else:
            self._borrowed = (*self._borrowed, processor)

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        for processor in self._all():
            processor.on_start(span, parent_context)

    def _on_ending(self, span: Span) -> None:
        for processor in self._all():
            processor._on_ending(span)  # the SDK hook, forwarded as its multi-processor does

    def on_end(self, span: ReadableSpan) -> None:
        for processor in self._all():
            processor.on_end(span)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        flushed = [processor.force_flush(timeout_millis) for processor in self._all()]
        return all(flushed)

    def shutdown(self) -> None:
        owned, self._owned = self._owned, ()
        for processor in owned:
            processor.shutdown()
        for processor in self._borrowed:
            processor.force_flush()

    def _all(self) -> tuple[SpanProcessor, ...]:
        return (*self._owned, *self._borrowed)


def configure_tracing(service_name: str, *, exporter: SpanExporter | None = None) -> TracerProvider:
    """Install the process's tracer provider, or return the one already installed.

    Args:
        service_name: The kebab-case service name; ``OTEL_SERVICE_NAME`` overrides it.
        exporter: An exporter to attach with a SimpleSpanProcessor (tests). When given on
            the first call, the environment's exporters are not attached. On later calls it
            is added to the installed provider.

    Returns:
        The global tracer provider: the one this call installed, the one an earlier call
        installed, or an SDK provider that was already global.

    Raises:
        ValueError: ``OTEL_TRACES_EXPORTER`` names an exporter other than otlp, console
            or none.
    """
    global _provider, _processors
    with _lock:
        if _provider is None or _processors is None:
            processors = _Processors()
            for processor in [] if exporter is not None else _processors_from_env():
                processors.attach(processor, owned=True)
            installed = trace.get_tracer_provider()
            if isinstance(installed, TracerProvider):
                provider = installed
            else:
                name = os.environ.get(OTEL_SERVICE_NAME) or service_name
                provider = TracerProvider(resource=Resource.create({SERVICE_NAME: name}))
                trace.set_tracer_provider(provider)
            provider.add_span_processor(processors)
            _provider, _processors = provider, processors
        if exporter is not None:
            _processors.attach(SimpleSpanProcessor(exporter), owned=False)
        return _provider


def shutdown_tracing() -> None:
    """Export what is buffered and shut down the exporters the environment chose.

    Call it when the service stops. Spans ended afterwards still reach explicitly given
    exporters; the environment's exporters are gone for the rest of the process.
    """
    with _lock:
        if _processors is not None:
            _processors.force_flush()
            _processors.shutdown()


def _processors_from_env() -> list[SpanProcessor]:
    has_endpoint = bool(
        os.environ.get(OTEL_EXPORTER_OTLP_ENDPOINT)
        or os.environ.get(OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)
    )
    default = "otlp" if has_endpoint else "none"
    chosen = os.environ.get(OTEL_TRACES_EXPORTER, "").strip() or default
    names = [name.strip().lower() for name in chosen.split(",") if name.strip()]
    unknown = [name for name in names if name not in _EXPORTERS]
    if unknown:
        raise ValueError(
            f"{OTEL_TRACES_EXPORTER}={chosen!r} names unknown exporters {unknown}; "
            f"use a comma-separated list of {', '.join(_EXPORTERS)}"
        )
    processors: list[SpanProcessor] = []
    if "otlp" in names:
        processors.append(BatchSpanProcessor(OTLPSpanExporter()))
    if "console" in names:
        processors.append(SimpleSpanProcessor(ConsoleSpanExporter(out=sys.stdout)))
    return processors

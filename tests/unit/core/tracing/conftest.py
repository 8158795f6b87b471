"""Fixtures for tracing tests: an in-memory exporter on the process's tracer provider."""

from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from vcbus.core.tracing import configure_tracing


@pytest.fixture(scope="session")
def session_span_exporter() -> InMemorySpanExporter:
    """One exporter attached to the global provider for the whole session."""
    exporter = InMemorySpanExporter()
    configure_tracing("vcbus-test", exporter=exporter)
    return exporter


@pytest.fixture
def span_exporter(session_span_exporter: InMemorySpanExporter) -> Iterator[InMemorySpanExporter]:
    """The session exporter, emptied before and after the test."""
    session_span_exporter.clear()
    yield session_span_exporter
    session_span_exporter.clear()

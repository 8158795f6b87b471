"""Markers from folders; shared fixtures: a virtual clock, an in-memory bus, captured spans.

At the end of the run, the processes the suite started that still run are reported and
ended (:mod:`tests.support.leftovers`).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.support import leftovers
from vcbus.core.bus.memory import InMemoryBus
from vcbus.core.runtime.clock import VirtualClock

ROOT = Path(__file__).resolve().parents[1]
VOLCANO_EXAMPLES = ROOT / "tests" / "volcano_examples"
"""Volcano's own example files, vendored with their licence and the commit they came from
(tests/volcano_examples/README.md)."""
VOLCANO_TYPOS = {
    "kubecon-2019-china/task-priority/elastic-job.yaml": [
        'unknown field "spec.tasks[0].template.spec.priorityClass"; '
        'did you mean "priorityClassName"?',
        'unknown field "spec.tasks[1].template.spec.priorityClass"; '
        'did you mean "priorityClassName"?',
    ],
}
"""Volcano's examples with a misspelt field, refused by strict field validation as kubectl
refuses them; each with the messages admission gives."""

pytest_plugins = ["tests.support.broker"]

_EXPORTER = InMemorySpanExporter()


def _install_test_tracer() -> None:
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))


_install_test_tracer()

LEFTOVER_GRACE = 5.0
"""How long processes still exiting at the end of the run get before they count as left over."""

_LEFTOVERS = pytest.StashKey[list[leftovers.Leftover]]()


def pytest_configure(config: pytest.Config) -> None:
    """Mark every process this run starts (its environment), to find what outlives it."""
    leftovers.mark_run()


def pytest_sessionfinish(session: pytest.Session) -> None:
    """End the processes of this run that outlived their tests, and keep them for the report."""
    deadline = time.monotonic() + LEFTOVER_GRACE
    found = leftovers.leftovers()
    while found and time.monotonic() < deadline:
        time.sleep(0.1)
        found = leftovers.leftovers()
    leftovers.end(found)
    session.config.stash[_LEFTOVERS] = found


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Name each process the run started that outlived it (a fixture that did not stop it)."""
    found = terminalreporter.config.stash.get(_LEFTOVERS, [])
    if not found:
        return
    terminalreporter.section("processes left running by the tests", sep="=", red=True)
    terminalreporter.write_line(
        f"{len(found)} process(es) started by this run outlived it (now SIGKILLed):"
    )
    for leftover in found:
        terminalreporter.write_line(f"  pid {leftover.pid}: {leftover.command[:200]}")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark tests by folder: tests/integration → integration, tests/e2e → e2e."""
    for item in items:
        parts = Path(str(item.fspath)).parts
        if "integration" in parts:
            item.add_marker(pytest.mark.integration)
        if "e2e" in parts:
            item.add_marker(pytest.mark.e2e)


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """Spans finished during the test (the process-wide test exporter, cleared first)."""
    _EXPORTER.clear()
    yield _EXPORTER
    _EXPORTER.clear()


@pytest.fixture
def clock() -> VirtualClock:
    """A virtual clock at 2026-01-01T00:00:00Z."""
    return VirtualClock()


@pytest.fixture
def memory_bus() -> InMemoryBus:
    """A fresh in-memory bus."""
    return InMemoryBus()

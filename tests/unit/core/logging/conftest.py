"""Fixtures for logging tests: configuration is process-wide, so each test restores it."""

import logging
from collections.abc import Iterator

import pytest
import structlog
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import Tracer


@pytest.fixture(autouse=True)
def restore_logging() -> Iterator[None]:
    """Put structlog and the root logger back as they were after each test."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    structlog.reset_defaults()
    structlog.contextvars.clear_contextvars()
    root.handlers[:] = handlers
    root.setLevel(level)


@pytest.fixture
def tracer() -> Tracer:
    """A tracer of a private provider, so recording spans exist without global setup."""
    return TracerProvider(shutdown_on_exit=False).get_tracer("test")

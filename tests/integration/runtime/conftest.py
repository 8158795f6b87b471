"""Fixtures of the process-level runtime tests: the processes a test starts, stopped after it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.processes import Processes


@pytest.fixture
def processes() -> Iterator[Processes]:
    """Start processes with ``processes.start(...)``; each is stopped and closed afterwards."""
    with Processes() as started:
        yield started

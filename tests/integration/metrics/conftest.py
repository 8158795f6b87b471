"""The system whose metrics are scraped: five services as processes on the session's broker."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.support.served import ServedSystem, served_system


@pytest.fixture(scope="module")
def system(kafka_bootstrap: str) -> Iterator[ServedSystem]:
    """Two simulated nodes of 4 CPU and 8Gi, under a topic prefix of this module's own."""
    prefix = f"t-{os.getpid()}-metrics."
    cluster = ["--nodes", "2", "--node-cpu", "4", "--node-memory", "8Gi"]
    with served_system(kafka_bootstrap, prefix, cluster_args=cluster) as running:
        yield running

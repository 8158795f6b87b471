"""The system the end-to-end tests share: broker, topics and five service processes."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.e2e.system import System, running_system

CLUSTER_ARGS = ("--nodes", "4", "--node-cpu", "8")
"""Room for every example at once; nodes are labelled linux, as Volcano's examples select."""


@pytest.fixture(scope="module")
def system(kafka_bootstrap: str, request: pytest.FixtureRequest) -> Iterator[System]:
    """Every service as its own process under a prefix unique to the test module.

    The services are stopped with SIGTERM (SIGKILL if they hang) when the module is done.
    """
    module = request.module.__name__.rsplit(".", 1)[-1].replace("_", "-")
    with running_system(
        kafka_bootstrap, f"e2e-{os.getpid()}-{module}.", cluster_args=CLUSTER_ARGS
    ) as running:
        yield running

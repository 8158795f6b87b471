"""A job no node could ever hold locks nothing (docs/design.md#reservation,
docs/design.md#pending-reasons), through the five services.

Volcano's own ``task-start-dependency/job.yaml``, submitted as it is, selects
``kubernetes.io/os: linux`` nodes; this cluster's nodes say ``kubernetes.io/os=windows``
(simulated nodes are labelled linux by default, where the example runs). The job is never
elected target of a reservation, so a small job submitted after it runs at once, and the
example's PodGroup says why it waits: ``Infeasible``, with the fit errors.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator

import pytest

from tests.conftest import VOLCANO_EXAMPLES
from tests.e2e.system import (
    System,
    describe,
    read_topic,
    running_system,
    submit,
    wait_for_jobs,
    with_run_seconds,
)
from vcbus.contracts import PodGroupPhaseChanged, TargetJobElected, Topic
from vcbus.contracts.objects import JobPhase

pytestmark = pytest.mark.timeout(180)

EXAMPLE = VOLCANO_EXAMPLES / "task-start-dependency" / "job.yaml"
SMALL = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: small}
spec:
  tasks:
    - name: worker
      replicas: 1
      template:
        spec:
          containers:
            - name: worker
              image: busybox
              resources: {requests: {cpu: "1"}}
"""


@pytest.fixture(scope="module")
def system(kafka_bootstrap: str) -> Iterator[System]:
    """Two 4-cpu nodes that no ``kubernetes.io/os: linux`` selector matches."""
    prefix = f"e2e-{os.getpid()}-infeasible."
    with running_system(
        kafka_bootstrap,
        prefix,
        cluster_args=(
            *("--nodes", "2", "--node-cpu", "4"),
            *("--node-label", "kubernetes.io/os=windows"),
        ),
    ) as running:
        yield running


def test_small_job_runs_when_an_infeasible_example_was_submitted_before_it(
    system: System,
) -> None:
    asyncio.run(_run(system))


async def _run(system: System) -> None:
    example = [item.label for item in await submit(system, EXAMPLE.read_text())]
    small = [item.label for item in await submit(system, with_run_seconds(SMALL, 1.0))]
    view = await wait_for_jobs(system, small)
    assert str(view.jobs[small[0]].phase) == str(JobPhase.COMPLETED), describe(view, system)

    statuses = [e for _, e in await read_topic(system, Topic.PODGROUPS_STATUS)]
    reasons = [
        c
        for e in statuses
        if isinstance(e, PodGroupPhaseChanged) and e.job == example[0]
        for c in e.conditions
    ]
    assert reasons, describe(view, system)
    last = reasons[-1]
    assert last.reason == "Infeasible"
    assert "node(s) didn't match Pod's node affinity/selector" in last.message
    elections = [
        e
        for _, e in await read_topic(system, Topic.RESERVATIONS)
        if isinstance(e, TargetJobElected)
    ]
    assert [e.job for e in elections if e.job == example[0]] == []

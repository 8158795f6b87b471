"""Real jobs on a real node: the agent runs bound pods as processes (SPEC A14).

One system (the five services, no simulated node) and one agent for the module; each test
submits its own jobs and checks what the processes did and what was published.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from contracts.objects.pod import PodPhase
from tests.e2e.real_nodes import gang_job, pod_statuses, start_agent
from tests.e2e.system import System, describe, running_system, submit, wait_for_jobs
from tests.support.processes import Processes, ServiceProcess

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def system(kafka_bootstrap: str) -> Iterator[System]:
    """The five services with no simulated node."""
    with running_system(
        kafka_bootstrap, f"e2e-{os.getpid()}-real.", cluster_args=("--nodes", "0")
    ) as running:
        yield running


@pytest.fixture(scope="module")
def agent(system: System, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    """One agent, node ``real-0``."""
    with Processes() as processes:
        yield start_agent(processes, system, tmp_path_factory.mktemp("agent"), "real-0")


async def test_a_gang_of_four_ranks_meets_through_the_plugins_variables(
    system: System, agent: ServiceProcess
) -> None:
    await submit(system, gang_job("rendezvous"))
    view = await wait_for_jobs(system, ["default/rendezvous"])
    assert view.jobs["default/rendezvous"].phase == "Completed", (
        describe(view, system) + "\n--- agent ---\n" + agent.tail(40)
    )
    statuses = await pod_statuses(system, "default/rendezvous")
    ended = {s.pod: s for s in statuses if s.phase is PodPhase.SUCCEEDED}
    assert sorted(ended) == [
        "default/rendezvous-master-0",
        "default/rendezvous-worker-0",
        "default/rendezvous-worker-1",
        "default/rendezvous-worker-2",
    ]
    bound = [s for s in statuses if s.reason == "Bound"]
    assert all(s.host_ip and s.ports for s in bound)

"""A gang in containers: the demo's four ranks, each in its own pod sandbox, meet by name.

One system and one agent (node ``gang-0``, ``--runtime podman``) through the real broker;
the demo's real job (``vcbus/services/cli/demo/real``) in the demo's image, built once,
offline, from this host's Python. The pytorch plugin gives each rank the master's Volcano
name, ``<job>-master-0.<job>``, which resolves on the node's network: the master collects
every worker's rank and answers the whole list, which each rank checks and prints.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.real_nodes import (
    DataDirs,
    RealNode,
    gang_job,
    pod_statuses,
    start_agent,
    vcbus_logs,
)
from tests.e2e.system import System, running_system, submit, wait_for_jobs
from tests.support.processes import Processes
from vcbus.contracts.objects.pod import PodPhase
from vcbus.services.agent.app import podman
from vcbus.services.cli import demo_image

pytestmark = pytest.mark.timeout(300)

GANG = {"pool": "gang"}


@pytest.fixture(scope="module")
def image() -> str:
    """The demo's image (the host's Python), built once."""
    problem = podman.unavailable()
    if problem:
        pytest.fail(f"podman cannot run containers here: {problem}")
    built = demo_image.ensure()
    assert not built, built
    return demo_image.IMAGE


@pytest.fixture(scope="module")
def system(kafka_bootstrap: str) -> Iterator[System]:
    """The five services with no simulated node."""
    with running_system(
        kafka_bootstrap, f"e2e-{os.getpid()}-gang.", cluster_args=("--nodes", "0")
    ) as running_:
        yield running_


@pytest.fixture(scope="module")
def agent(system: System, image: str) -> Iterator[RealNode]:
    """Node ``gang-0``, its pods in containers."""
    with DataDirs() as dirs, Processes() as processes:
        yield start_agent(
            processes,
            system,
            dirs.new("gang"),
            "gang-0",
            "--label",
            "pool=gang",
            runtime="podman",
        )


def in_image(image: str) -> Any:
    def edit(job: dict[str, Any]) -> None:
        for task in job["spec"]["tasks"]:
            task["template"]["spec"]["containers"][0]["image"] = image

    return edit


async def test_four_ranks_in_containers_reach_the_master_by_its_volcano_name(
    system: System, agent: RealNode, image: str
) -> None:
    await submit(system, gang_job("boxgang", selector=GANG, edit=in_image(image)))
    view = await wait_for_jobs(system, ["default/boxgang"])
    assert view.jobs["default/boxgang"].phase == "Completed", agent.process.tail(40)
    statuses = await pod_statuses(system, "default/boxgang")
    ended = sorted(s.pod for s in statuses if s.phase is PodPhase.SUCCEEDED)
    assert ended == [
        "default/boxgang-master-0",
        "default/boxgang-worker-0",
        "default/boxgang-worker-1",
        "default/boxgang-worker-2",
    ]
    ranks = (("master", 0, 0), ("worker", 0, 1), ("worker", 1, 2), ("worker", 2, 3))
    for task, index, rank in ranks:  # each saw the whole world, at the master's Volcano name
        done = vcbus_logs(system, "boxgang", "--task", task, "--index", str(index))
        assert done.stdout.strip() == (
            f"rank {rank} of 4 met ranks [0, 1, 2, 3] at boxgang-master-0.boxgang:23456"
        ), done.stderr

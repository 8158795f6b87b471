"""Real nodes for end-to-end tests: node agents as processes beside the five services.

``agent`` starts ``python -m services.cli agent`` for a node of its own data directory
(pods run as ``nobody``, host ports from a range of the test's own, the logs endpoint on a
free port, a heartbeat every second) and waits until it registered its node. Job texts
come from the demo's real gang job, renamed and reshaped per test. Helpers find a job's
pods on ``pods.status`` and the processes a pod left.
"""

from __future__ import annotations

import copy
import itertools
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from contracts import PodPhaseChanged, Topic
from tests.e2e.system import System, read_topic
from tests.support.processes import Processes, ServiceProcess, event, service_env

DEMO_JOB = (
    Path(__file__).resolve().parents[2]
    / "services"
    / "cli"
    / "demo"
    / "real"
    / "40-pytorch-rendezvous.yaml"
)
_ranges = itertools.count()


def start_agent(
    processes: Processes,
    system: System,
    data_dir: Path,
    node: str,
    *extra: str,
    port_range: str | None = None,
) -> ServiceProcess:
    """Start an agent for ``node`` and wait until its node is registered."""
    if port_range is None:
        first = 40000 + (os.getpid() % 50) * 400 + next(_ranges) * 40
        port_range = f"{first}-{first + 39}"
    agent = processes.start(
        f"agent-{node}",
        "services.cli",
        "agent",
        "--node-name",
        node,
        "--data-dir",
        str(data_dir),
        "--run-as",
        "nobody",
        "--listen-port",
        "0",
        "--heartbeat",
        "1",
        "--port-range",
        port_range,
        "--cpu",
        "4",
        "--memory",
        "8Gi",
        *extra,
        env=service_env(system.bootstrap, system.prefix, VCBUS_POLL_TIMEOUT="0.1"),
    )
    agent.wait_for(event("node_registered"))
    return agent


def gang_job(
    name: str,
    *,
    workers: int = 3,
    edit: Callable[[dict[str, Any]], None] | None = None,
) -> str:
    """The demo's rendezvous job as ``name``, with ``workers`` workers, edited by ``edit``."""
    job: dict[str, Any] = copy.deepcopy(yaml.safe_load(DEMO_JOB.read_text()))
    job["metadata"]["name"] = name
    job["spec"]["tasks"][1]["replicas"] = workers
    job["spec"]["minAvailable"] = workers + 1
    if edit is not None:
        edit(job)
    return yaml.safe_dump(job)


async def pod_statuses(system: System, job: str) -> list[PodPhaseChanged]:
    """Every phase change of the job's pods, in order."""
    return [
        found
        for _, found in await read_topic(system, Topic.PODS_STATUS)
        if isinstance(found, PodPhaseChanged) and found.job == job
    ]


def processes_in_group(pgid: int) -> list[str]:
    """The processes of a process group (``ps``), empty when none is left."""
    out = subprocess.run(
        ["ps", "-e", "-o", "pid=,pgid=,stat="],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    rows = [line.split() for line in out.splitlines()]
    return [row[0] for row in rows if len(row) == 3 and row[1] == str(pgid) and "Z" not in row[2]]

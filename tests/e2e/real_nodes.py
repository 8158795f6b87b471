"""Real nodes for end-to-end tests: node agents as processes beside the five services.

``agent`` starts ``python -m vcbus.services.cli agent`` for a node of its own data directory
(pods run as ``nobody`` and as host processes unless asked otherwise, host ports from a
range of the test's own, the logs endpoint on a free port, a heartbeat every second) and
waits until it registered its node. Job texts come from the demo's real gang job, renamed
and reshaped per test. Helpers find a job's pods on ``pods.status`` and the processes a pod
left.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import itertools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import yaml

from tests.e2e.system import WAIT, System, read_topic
from tests.support.processes import Processes, ServiceProcess, event, service_env
from vcbus.contracts import PodPhaseChanged, Topic
from vcbus.contracts.objects.pod import PodPhase
from vcbus.core.runtime.clock import SystemClock
from vcbus.services.agent.model import PodReport
from vcbus.services.cli.cluster_ca import KeyPair, issue, make_ca
from vcbus.services.cli.delete import delete_record

DEMO_JOB = (
    Path(__file__).resolve().parents[2]
    / "vcbus"
    / "services"
    / "cli"
    / "demo"
    / "real"
    / "40-pytorch-rendezvous.yaml"
)
_ranges = itertools.count()
TOKEN = "e2e-agent-token"
"""The agents' logs token (``VCBUS_AGENT_TOKEN``), which ``vcbus logs`` must send."""
_ca: list[KeyPair] = []


def cluster_ca() -> KeyPair:
    """This run's cluster CA (made once): it issues each agent's certificate."""
    if not _ca:
        _ca.append(make_ca(Path(tempfile.mkdtemp(prefix="vcbus-e2e-ca-"))))
    return _ca[0]


def client_env() -> dict[str, str]:
    """What ``vcbus logs`` and the dashboard need to reach the agents: token and CA."""
    return {"VCBUS_AGENT_TOKEN": TOKEN, "VCBUS_AGENT_TLS_CAFILE": str(cluster_ca().cert)}


def next_port_range() -> str:
    """A range of 20 host ports of its own for an agent of this run.

    Below the ephemeral ports (32768 and up, where the clients' own connections are), as
    the agent's default range is.
    """
    first = 30000 + (os.getpid() % 12) * 200 + next(_ranges) * 20 % 200
    return f"{first}-{first + 19}"


def start_agent(
    processes: Processes,
    system: System,
    data_dir: Path,
    node: str,
    *extra: str,
    port_range: str | None = None,
    env: dict[str, str] | None = None,
    run_as: str = "nobody",
    wrap: Sequence[str] = (),
    runtime: str = "process",
) -> RealNode:
    """Start an agent for ``node`` and wait until its node is registered.

    ``env``: more of its environment (``OTEL_*``). ``run_as``: every pod's user; empty: each
    pod a uid of its own (the agent's default as root). ``wrap``: a command that runs it
    (``ip netns exec NAME``: on another host). ``runtime``: its ``--runtime``; host
    processes unless a test asks for containers (the tests' jobs run host commands).
    """
    if port_range is None:
        port_range = next_port_range()
    pair = issue(cluster_ca(), node, data_dir.parent / f"{data_dir.name}-certs")
    agent = processes.start(
        f"agent-{node}",
        "vcbus.services.cli",
        "agent",
        "--node-name",
        node,
        "--data-dir",
        str(data_dir),
        *(("--run-as", run_as) if run_as else ()),
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
        "--runtime",
        runtime,
        *extra,
        env=service_env(
            system.bootstrap,
            system.prefix,
            **{
                "VCBUS_POLL_TIMEOUT": "0.1",
                "VCBUS_AGENT_TOKEN": TOKEN,
                "VCBUS_AGENT_TLS_CERTFILE": str(pair.cert),
                "VCBUS_AGENT_TLS_KEYFILE": str(pair.key),
                **(env or {}),
            },
        ),
        wrap=wrap,
    )
    agent.wait_for(event("node_registered"))
    return RealNode(agent, data_dir, node)


def gang_job(
    name: str,
    *,
    workers: int = 3,
    selector: dict[str, str] | None = None,
    edit: Callable[[dict[str, Any]], None] | None = None,
) -> str:
    """The demo's rendezvous job as ``name``, with ``workers`` workers, edited by ``edit``."""
    job: dict[str, Any] = copy.deepcopy(yaml.safe_load(DEMO_JOB.read_text()))
    job["metadata"]["name"] = name
    job["spec"]["tasks"][1]["replicas"] = workers
    job["spec"]["minAvailable"] = workers + 1
    for task in job["spec"]["tasks"]:
        task["template"] = copy.deepcopy(task["template"])
        if selector:
            task["template"]["spec"]["nodeSelector"] = selector
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


class DataDirs:
    """Agents' data directories under one base in ``/tmp``, which every user can search.

    The pods run as ``nobody``: their directories must be reachable by it (pytest's own
    temporary directories are not: their base is readable by root alone).
    """

    def __init__(self) -> None:
        self.base = Path(tempfile.mkdtemp(prefix="vcbus-agents-"))
        self.base.chmod(0o711)

    def new(self, name: str) -> Path:
        """A new, empty data directory."""
        path = self.base / name
        path.mkdir()
        return path

    def __enter__(self) -> DataDirs:
        return self

    def __exit__(self, *_: object) -> None:
        """Kill what the agents' pods left running (pods outlive agents), then remove all."""
        for status in self.base.glob("*/pods/*/status.json"):
            with contextlib.suppress(OSError, msgspec.DecodeError):
                report = msgspec.json.decode(status.read_bytes(), type=PodReport)
                with contextlib.suppress(OSError):
                    os.kill(report.supervisor, signal.SIGKILL)
                for container in report.containers:
                    with contextlib.suppress(OSError):
                        os.killpg(container.pgid, signal.SIGKILL)
        shutil.rmtree(self.base, ignore_errors=True)


@dataclass(frozen=True)
class RealNode:
    """A running agent: its process, data directory and node name."""

    process: ServiceProcess
    data_dir: Path
    name: str


def simple_job(
    name: str,
    script: str,
    *,
    replicas: int = 1,
    selector: dict[str, str] | None = None,
    policies: list[dict[str, str]] | None = None,
    limits: dict[str, str] | None = None,
    plugins: dict[str, list[str]] | None = None,
    grace: int | None = None,
) -> str:
    """A job of one task whose pods run ``sh -c script``."""
    container: dict[str, Any] = {
        "name": "main",
        "image": "busybox",
        "command": ["sh", "-c", script],
        "resources": {"requests": {"cpu": "100m", "memory": "32Mi"}},
    }
    if limits:
        container["resources"]["limits"] = limits
    spec: dict[str, Any] = {"restartPolicy": "Never", "containers": [container]}
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    if selector:
        spec["nodeSelector"] = selector
    job = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "minAvailable": replicas,
            "schedulerName": "volcano",
            "policies": policies or [],
            "plugins": plugins or {},
            "tasks": [{"name": "task", "replicas": replicas, "template": {"spec": spec}}],
        },
    }
    return yaml.safe_dump(job)


async def wait_for_statuses(
    system: System,
    job: str,
    done: Callable[[list[PodPhaseChanged]], bool],
    timeout: float = WAIT,
) -> list[PodPhaseChanged]:
    """Read the job's pod statuses until ``done`` says so (or the bound passes)."""
    statuses: list[PodPhaseChanged] = []
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(timeout):
            while True:
                statuses = await pod_statuses(system, job)
                if done(statuses):
                    break
                await asyncio.sleep(0.2)
    return statuses


def running(count: int) -> Callable[[list[PodPhaseChanged]], bool]:
    """Whether at least ``count`` pods were reported Running."""
    return lambda statuses: len({s.pod for s in statuses if s.phase is PodPhase.RUNNING}) >= count


def pod_groups(data_dir: Path, uids: set[str]) -> list[int]:
    """The process groups of the containers of the pods ``uids`` the agent runs."""
    groups: list[int] = []
    for uid in sorted(uids):
        status = data_dir / "pods" / uid / "status.json"
        report = msgspec.json.decode(status.read_bytes(), type=PodReport)
        groups.extend(c.pgid for c in report.containers if c.pgid)
    return groups


def vcbus_logs(system: System, *args: str, token: str = TOKEN) -> subprocess.CompletedProcess[str]:
    """``vcbus logs ARGS`` against the system, with the agents' token (or another)."""
    return subprocess.run(
        [sys.executable, "-m", "vcbus.services.cli", "logs", *args],
        env=service_env(
            system.bootstrap, system.prefix, **{**client_env(), "VCBUS_AGENT_TOKEN": token}
        ),
        capture_output=True,
        text=True,
        timeout=WAIT,
        check=False,
    )


async def delete_job(system: System, key: str) -> None:
    """Publish ``vcbus delete job KEY``'s record."""
    record, _ = delete_record(key, system.prefix, SystemClock().now())
    producer = system.bus.producer(client_id="e2e-delete")
    try:
        await producer.send([record])
    finally:
        await producer.stop()


async def wait_gone(groups: list[int], timeout: float = WAIT) -> list[str]:
    """Wait until no process of ``groups`` is left; those left when the bound passed."""
    left: list[str] = []
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(timeout):
            while True:
                left = [p for g in groups for p in processes_in_group(g)]
                if not left:
                    break
                await asyncio.sleep(0.2)
    return left

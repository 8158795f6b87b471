"""A pod in containers as a kubelet runs it: volumes, init containers, pulls, ports, swap.

One system and one agent (node ``box-1``, ``--runtime podman``, one ``--host-path-allow``
directory) for the module, the busybox image of ``test_agent_containers``. Each test needs
podman (the project's setup installs it).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml

from tests.e2e.real_nodes import (
    DataDirs,
    RealNode,
    delete_job,
    running,
    simple_job,
    start_agent,
    vcbus_logs,
    wait_for_statuses,
)
from tests.e2e.system import WAIT, System, running_system, submit
from tests.e2e.test_agent_containers import IMAGE, PROBLEM, image  # noqa: F401 - a fixture
from tests.support.processes import Processes
from vcbus.contracts.events.pods_status import PodPhaseChanged
from vcbus.contracts.objects.pod import PodPhase
from vcbus.services.agent.app import podman
from vcbus.services.agent.model import PodReport

pytestmark = [pytest.mark.timeout(300), pytest.mark.usefixtures("image")]

NODE = "box-1"
SELECT = {"pool": "box1"}


@pytest.fixture(scope="module")
def system(kafka_bootstrap: str) -> Iterator[System]:
    with running_system(
        kafka_bootstrap, f"e2e-{os.getpid()}-pods.", cluster_args=("--nodes", "0")
    ) as running_:
        yield running_


@pytest.fixture(scope="module")
def processes() -> Iterator[Processes]:
    with Processes() as started:
        yield started


@pytest.fixture(scope="module")
def data_dirs() -> Iterator[DataDirs]:
    with DataDirs() as dirs:
        yield dirs


@pytest.fixture(scope="module")
def shared() -> Iterator[Path]:
    """The host directory pods may mount (``--host-path-allow``), readable by every user."""
    with tempfile.TemporaryDirectory(prefix="vcbus-host-") as name:
        path = Path(name)
        path.chmod(0o755)
        (path / "hello").write_text("from the host\n")
        (path / "hello").chmod(0o644)
        yield path


@pytest.fixture(scope="module")
def agent(system: System, data_dirs: DataDirs, processes: Processes, shared: Path) -> RealNode:
    assert not PROBLEM, f"podman cannot run containers here: {PROBLEM}"
    return start_agent(
        processes,
        system,
        data_dirs.new("pods"),
        NODE,
        *("--label", "pool=box1", "--runtime", "podman", "--host-path-allow", str(shared)),
    )


def pod_job(name: str, script: str, **spec: Any) -> dict[str, Any]:
    """A job of one pod running ``sh -c script`` in the image; ``spec``: more of its pod."""
    job: dict[str, Any] = yaml.safe_load(simple_job(name, script, selector=SELECT))
    pod = job["spec"]["tasks"][0]["template"]["spec"]
    pod["containers"][0]["image"] = IMAGE
    pod.update(spec)
    return job


def init(name: str, script: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, "image": IMAGE, "command": ["sh", "-c", script], **fields}


async def ended(system: System, name: str) -> list[PodPhaseChanged]:
    return await wait_for_statuses(
        system,
        f"default/{name}",
        lambda ss: any(s.phase in (PodPhase.SUCCEEDED, PodPhase.FAILED) for s in ss),
    )


def left_behind(agent: RealNode, uid: str) -> list[str]:
    """What of the pod is left: its containers, its volumes' directory, mounts under it."""
    volumes = agent.data_dir / "pods" / uid / "volumes"
    mounts = [
        line.split()[4]
        for line in Path("/proc/self/mountinfo").read_text().splitlines()
        if str(agent.data_dir) in line.split()[4]
    ]
    sandbox = subprocess.run([*podman.BASE, "pod", "exists", podman.sandbox_of(uid)], check=False)
    return [
        *podman.containers(NODE, uid),
        *([podman.sandbox_of(uid)] if sandbox.returncode == 0 else []),
        *([str(volumes)] if volumes.exists() else []),
        *mounts,
    ]


MOUNTS = [
    {"name": "share", "mountPath": "/share"},
    {"name": "shm", "mountPath": "/shm"},
    {"name": "host", "mountPath": "/host", "readOnly": True},
]


def volumes(shared: Path) -> list[dict[str, Any]]:
    return [
        {"name": "share", "emptyDir": {}},
        {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "8Mi"}},
        {"name": "host", "hostPath": {"path": str(shared)}},
    ]


async def test_init_containers_run_in_order_and_share_the_pods_volumes(
    system: System, agent: RealNode, shared: Path
) -> None:
    script = (
        "cat /share/order; "
        "grep -q '^vcbus-shm /shm tmpfs .*size=8192k' /proc/mounts && echo tmpfs; "
        "cat /host/hello; touch /host/x 2>/dev/null || echo read-only"
    )
    job = pod_job(
        "podvols",
        script,
        volumes=volumes(shared),
        initContainers=[
            init("first", "echo one > /share/order", volumeMounts=MOUNTS[:1]),
            init("second", "echo two >> /share/order", volumeMounts=MOUNTS[:1]),
        ],
    )
    job["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["volumeMounts"] = MOUNTS
    await submit(system, yaml.safe_dump(job))
    statuses = await ended(system, "podvols")
    assert statuses[-1].phase is PodPhase.SUCCEEDED, agent.process.tail(30)
    done = vcbus_logs(system, "podvols")
    assert done.stdout.splitlines() == [
        "one",
        "two",
        "tmpfs",
        "from the host",
        "read-only",
    ]
    assert not (shared / "x").exists()
    assert left_behind(agent, statuses[-1].pod_uid) == []


async def test_a_failing_init_container_fails_the_pod_and_its_containers_never_run(
    system: System, agent: RealNode
) -> None:
    job = pod_job("podinitfails", "echo ran", initContainers=[init("setup", "exit 3")])
    await submit(system, yaml.safe_dump(job))
    statuses = await ended(system, "podinitfails")
    failed = statuses[-1]
    assert (failed.phase, failed.reason, failed.exit_code) == (PodPhase.FAILED, "InitError", 3)
    assert "init container setup exited 3" in failed.message
    assert not (agent.data_dir / "pods" / failed.pod_uid / "logs" / "main").exists()


@pytest.mark.parametrize(
    ("volume", "reason", "says"),
    [
        (
            {"name": "data", "persistentVolumeClaim": {"claimName": "data"}},
            "VolumeNotSupported",
            "volume data (persistentVolumeClaim) is not supported",
        ),
        (
            {"name": "etc", "hostPath": {"path": "/etc"}},
            "HostPathNotAllowed",
            "hostPath /etc is outside the agent's allowed paths",
        ),
    ],
)
async def test_a_volume_the_node_does_not_give_fails_the_pod_naming_it(
    system: System, agent: RealNode, volume: dict[str, Any], reason: str, says: str
) -> None:
    name = f"podrefused{volume['name']}"
    mounts = [{"name": volume["name"], "mountPath": "/v"}]
    job = pod_job(name, "true", volumes=[volume])
    job["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["volumeMounts"] = mounts
    await submit(system, yaml.safe_dump(job))
    failed = (await ended(system, name))[-1]
    assert (failed.phase, failed.reason) == (PodPhase.FAILED, reason), agent.process.tail(30)
    assert says in failed.message


async def test_a_failed_pull_backs_off_pending_then_fails_the_pod(
    system: System, agent: RealNode
) -> None:
    job = pod_job("podpull", "true")
    job["spec"]["tasks"][0]["template"]["spec"]["containers"][0].update(
        image="localhost:1/vcbus-absent:1", imagePullPolicy="Always"
    )
    await submit(system, yaml.safe_dump(job))
    statuses = await ended(system, "podpull")
    waiting = [s.message for s in statuses if s.reason == "ImagePullBackOff"]
    assert all(s.phase is PodPhase.PENDING for s in statuses if s.reason == "ImagePullBackOff")
    assert [m.rsplit("; ", 1)[-1] for m in waiting] == [
        f"back-off {2**n}s pulling again (pull {n + 1} of 4 failed)" for n in range(3)
    ], agent.process.tail(30)
    failed = statuses[-1]
    assert (failed.phase, failed.reason) == (PodPhase.FAILED, "ErrImagePull")
    assert failed.message.endswith("(gave up after 4 pulls)")


def inspect(*args: str) -> str:
    """What ``podman ARGS`` prints."""
    done = subprocess.run([*podman.BASE, *args], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def sandbox_address(uid: str) -> str:
    """The address of the pod's sandbox on its node's network."""
    infra = inspect("pod", "inspect", "--format", "{{.InfraContainerID}}", podman.sandbox_of(uid))
    networks = json.loads(
        inspect("inspect", "--format", "{{json .NetworkSettings.Networks}}", infra)
    )
    return str(networks[podman.network_of(NODE)]["IPAddress"])


async def test_two_pods_listen_on_one_container_port_and_each_answers_a_host_port_too(
    system: System, agent: RealNode
) -> None:
    with socket.socket() as free:  # a port no one holds now, for the hostPort
        free.bind(("127.0.0.1", 0))
        host_port = free.getsockname()[1]
    for name in ("podporta", "podportb"):
        www = {"name": "www", "emptyDir": {}}
        job = pod_job(name, "hostname > /www/index.html; httpd -f -p 8080 -h /www", volumes=[www])
        main = job["spec"]["tasks"][0]["template"]["spec"]["containers"][0]
        port = {"containerPort": 8080, **({"hostPort": host_port} if name == "podporta" else {})}
        main.update(ports=[port], volumeMounts=[{"name": "www", "mountPath": "/www"}])
        main["resources"]["limits"] = {"memory": "64Mi"}
        await submit(system, yaml.safe_dump(job))
    answers = {}
    for name in ("podporta", "podportb"):
        statuses = await wait_for_statuses(system, f"default/{name}", running(1))
        assert running(1)(statuses), agent.process.tail(30)
        uid = statuses[-1].pod_uid
        address = sandbox_address(uid)
        answers[name] = await asyncio.to_thread(fetch, f"http://{address}:8080/")
        if name == "podporta":  # and through the node's own port
            published = await asyncio.to_thread(fetch, f"http://127.0.0.1:{host_port}/")
            assert published == "podporta-task-0\n"
        await delete_job(system, f"default/{name}")
        limits = inspect(
            "inspect",
            "--format",
            "{{.HostConfig.Memory}} {{.HostConfig.MemorySwap}}",
            podman.name_of(uid, "main"),
        ).split()
        assert limits == [str(64 * 1024 * 1024)] * 2  # no swap beside the memory limit
    assert answers == {"podporta": "podporta-task-0\n", "podportb": "podportb-task-0\n"}


def fetch(url: str) -> str:
    """The page at ``url``, asked again (bounded) while the server is not yet listening."""
    for _ in range(100):
        try:
            with urllib.request.urlopen(url, timeout=5) as answer:
                return str(answer.read().decode())
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"{url} never answered")


async def test_a_pod_whose_supervisor_is_killed_leaves_no_container_nor_volume(
    system: System, agent: RealNode, shared: Path
) -> None:
    job = pod_job("podlost", "echo up; sleep 300", volumes=volumes(shared))
    job["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["volumeMounts"] = MOUNTS
    await submit(system, yaml.safe_dump(job))
    statuses = await wait_for_statuses(system, "default/podlost", running(1))
    assert running(1)(statuses), agent.process.tail(30)
    uid = statuses[-1].pod_uid
    report = msgspec.json.decode(
        (agent.data_dir / "pods" / uid / "status.json").read_bytes(), type=PodReport
    )
    assert left_behind(agent, uid) != []  # its container, sandbox, volumes and tmpfs
    os.kill(report.supervisor, signal.SIGKILL)
    lost = (await ended(system, "podlost"))[-1]
    assert (lost.phase, lost.reason) == (PodPhase.FAILED, "Lost"), agent.process.tail(30)
    assert left_behind(agent, uid) == []


async def test_an_agent_killed_during_an_init_container_leaves_nothing_behind(
    system: System, data_dirs: DataDirs, processes: Processes, agent: RealNode, shared: Path
) -> None:
    go = shared / "go"
    job = pod_job(
        "podcrash",
        "cat /share/order /shm/mark",
        volumes=volumes(shared),
        initContainers=[
            init(
                "wait",
                "echo waited > /share/order; echo shm > /shm/mark; "
                "until [ -e /host/go ]; do sleep 0.1; done",
                volumeMounts=MOUNTS,
            )
        ],
    )
    job["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["volumeMounts"] = MOUNTS[:2]
    await submit(system, yaml.safe_dump(job))
    uid = ""
    for _ in range(int(WAIT / 0.2)):  # until the init container runs
        found = list((agent.data_dir / "pods").glob("*/logs/wait/0.log"))
        if found:
            uid = found[0].parts[-4]
            break
        await asyncio.sleep(0.2)
    assert uid, agent.process.tail(30)
    os.kill(agent.process.pid, signal.SIGKILL)
    go.touch()
    again = start_agent(
        processes,
        system,
        agent.data_dir,
        NODE,
        *("--label", "pool=box1", "--runtime", "podman", "--host-path-allow", str(shared)),
    )
    statuses = await ended(system, "podcrash")
    assert [s.phase for s in statuses].count(PodPhase.SUCCEEDED) == 1, again.process.tail(30)
    assert vcbus_logs(system, "podcrash").stdout.split() == ["waited", "shm"]
    assert left_behind(again, uid) == []

"""Attacks on a root node agent over the bus: forged records and pods against each other.

The real broker and one real agent (``vcbus agent`` as root, pods as uids of their own, real
cgroups) and no other service: the test writes what an attacker who can reach the broker
writes (a ``jobs.admitted`` record, a binding), as an ordinary job could. Each test states
the attack; what it shows is that the agent refuses it, and that nothing outside the pod's
own directory changed.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from tests.e2e.real_nodes import DataDirs, RealNode, start_agent
from tests.e2e.system import PARTITIONS, WAIT, System, read_topic
from tests.support.processes import Processes
from vcbus.contracts import BindingCreated, Event, JobAdmitted, PodPhaseChanged, Topic
from vcbus.contracts.events.pods_status import BindingRefused
from vcbus.contracts.keys import JobKey, NodeName
from vcbus.contracts.objects.job import Job
from vcbus.contracts.objects.pod import Pod, PodPhase
from vcbus.core.bus.kafka import AioKafkaBus
from vcbus.core.bus.kafka_settings import KafkaSettings
from vcbus.core.bus.outbox import Outbox
from vcbus.core.runtime.clock import SystemClock
from vcbus.core.runtime.topology import ensure_topics
from vcbus.services.agent.model import PodReport

pytestmark = [
    pytest.mark.timeout(240),
    pytest.mark.skipif(os.geteuid() != 0, reason="a root agent is the target"),
]

NODE = f"agentsec-attack-{os.getpid()}"
CLOCK = SystemClock()


@pytest.fixture(scope="module")
def system(kafka_bootstrap: str) -> System:
    """The broker and this module's topics; no service."""
    prefix = f"e2e-{os.getpid()}-agent-attacks."
    bus = AioKafkaBus(KafkaSettings(bootstrap_servers=kafka_bootstrap))
    asyncio.run(ensure_topics(bus, [], prefix, PARTITIONS))
    return System(bootstrap=kafka_bootstrap, prefix=prefix, services={})


@pytest.fixture(scope="module")
def data_dirs() -> Iterator[DataDirs]:
    """The agent's data directory; the node's cgroups removed at the end."""
    with DataDirs() as dirs:
        yield dirs
    for node in Path("/sys/fs/cgroup").glob(f"*/vcbus/{NODE}"):
        for pod in (p for p in node.iterdir() if p.is_dir()):
            with contextlib.suppress(OSError):
                pod.rmdir()
        with contextlib.suppress(OSError):
            node.rmdir()


@pytest.fixture(scope="module")
def agent(system: System, data_dirs: DataDirs) -> Iterator[RealNode]:
    """A root agent whose pods run each as a uid of its own (no ``--run-as``)."""
    with Processes() as processes:
        yield start_agent(processes, system, data_dirs.new("agent"), NODE, run_as="")


def job(
    name: str,
    script: str,
    *,
    container: str = "main",
    security: dict[str, Any] | None = None,
    **fields: Any,
) -> Job:
    """A job of one pod running ``sh -c script``; ``security``: the pod's securityContext."""
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "containers": [
            {"name": container, "image": "busybox", "command": ["sh", "-c", script], **fields}
        ],
    }
    if security is not None:
        spec["securityContext"] = security
    return msgspec.convert(
        {
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"tasks": [{"name": "t", "replicas": 1, "template": {"spec": spec}}]},
        },
        Job,
    )


def admitted(manifest: Job) -> JobAdmitted:
    key = JobKey(f"default/{manifest.metadata.name}")
    return JobAdmitted(
        event_id=f"forged-{key}",
        occurred_at=CLOCK.now(),
        job=key,
        manifest=manifest,
        spec_digest="x",
    )


def binding(manifest: Job, uid: str) -> BindingCreated:
    name = manifest.metadata.name
    pod = Pod(
        name=f"{name}-t-0",
        namespace="default",
        job=JobKey(f"default/{name}"),
        task="t",
        index=0,
        podgroup=name,
        uid=uid,
        requests={"cpu": 10, "memory": 16 * 2**20},
    )
    return BindingCreated(
        event_id=f"forged-bind-{uid}", occurred_at=CLOCK.now(), pod=pod, node=NodeName(NODE)
    )


async def publish(system: System, events: list[Event]) -> None:
    producer = system.bus.producer(client_id="e2e-attacker")
    try:
        outbox = Outbox(system.prefix)
        outbox.add_events(events)
        await producer.send(outbox.take())
    finally:
        await producer.stop()


async def statuses_until(
    system: System, done: Callable[[list[Event]], bool], timeout: float = WAIT
) -> list[Event]:
    found: list[Event] = []
    async with asyncio.timeout(timeout):
        while True:
            found = [event for _, event in await read_topic(system, Topic.PODS_STATUS)]
            if done(found):
                return found
            await asyncio.sleep(0.2)


def ended(uid: str) -> Callable[[list[Event]], bool]:
    return lambda events: any(
        isinstance(e, PodPhaseChanged)
        and e.pod_uid == uid
        and e.phase in (PodPhase.SUCCEEDED, PodPhase.FAILED)
        for e in events
    )


def final(events: list[Event], uid: str) -> PodPhaseChanged:
    return next(
        e
        for e in reversed(events)
        if isinstance(e, PodPhaseChanged)
        and e.pod_uid == uid
        and e.phase in (PodPhase.SUCCEEDED, PodPhase.FAILED)
    )


async def test_a_forged_binding_whose_uid_climbs_out_of_the_pods_dir_is_refused(
    system: System, agent: RealNode, data_dirs: DataDirs
) -> None:
    """Attack: a job that reached the broker publishes a binding whose pod uid is a path
    (``../../<its own directory>``, or absolute) to a directory it owns, with links planted
    there (``.plan.json.tmp``, ``work``, ``logs``) to root's files: the root agent would
    write the plan through the link, chown what the links name, and remove the directory
    when the pod is deleted. The binding is refused ``InvalidBinding`` naming ``pod.uid``,
    and nothing the links name changes."""
    trap = data_dirs.base / "trap"
    trap.mkdir()
    victim = data_dirs.base / "victim"
    victim.mkdir(mode=0o700)
    secret = victim / "shadow"
    secret.write_text("root's own\n")
    secret.chmod(0o600)
    (trap / ".plan.json.tmp").symlink_to(secret)
    (trap / "work").symlink_to(victim)
    (trap / "logs").symlink_to(victim)
    os.chown(trap, 65534, 65534)
    manifest = job("forged-uid", "echo pwned::0:0::/root:/bin/sh")
    relative = "../../trap"  # from the agent's pods directory
    uids = [relative, str(trap), "../../victim"]
    await publish(system, [admitted(manifest), *(binding(manifest, uid) for uid in uids)])
    events = await statuses_until(
        system,
        lambda found: {e.pod_uid for e in found if isinstance(e, BindingRefused)} >= set(uids),
    )
    refused = [e for e in events if isinstance(e, BindingRefused) and e.pod_uid in uids]
    assert {e.reason for e in refused} == {"InvalidBinding"}
    assert all("pod.uid" in e.message for e in refused)
    assert secret.read_text() == "root's own\n"
    info = secret.stat()
    assert (info.st_uid, stat.S_IMODE(info.st_mode)) == (0, 0o600)
    assert sorted(p.name for p in victim.iterdir()) == ["shadow"]


async def test_a_forged_container_name_cannot_aim_the_pods_log_outside_it(
    system: System, agent: RealNode, data_dirs: DataDirs
) -> None:
    """Attack: a forged ``jobs.admitted`` record names a container ``../../../../escaped``
    (admission refuses such a name; the agent trusted the record): the root supervisor
    would write the pod's output to ``escaped/0.log`` outside the agent's data directory.
    The pod fails ``InvalidSpec`` naming the container name, and nothing is written."""
    manifest = job("forged-name", "echo written", container="../../../../escaped")
    await publish(system, [admitted(manifest), binding(manifest, "forged-name-1")])
    events = await statuses_until(system, ended("forged-name-1"))
    status = final(events, "forged-name-1")
    assert (status.phase, status.reason) == (PodPhase.FAILED, "InvalidSpec")
    assert "container name" in status.message
    assert not (data_dirs.base / "escaped").exists()


async def test_run_as_group_0_needs_the_agents_permission(system: System, agent: RealNode) -> None:
    """Attack: a job asks ``securityContext.runAsGroup: 0`` (or shadow's group) with no
    ``runAsUser``: honoured without ``--allow-pod-users``/``--allow-root``, its pod read
    root-group files. The pod fails ``RunAsUserNotAllowed``, running nothing."""
    manifest = job("group-zero", "id -g", security={"runAsGroup": 0})
    await publish(system, [admitted(manifest), binding(manifest, "group-zero-1")])
    events = await statuses_until(system, ended("group-zero-1"))
    status = final(events, "group-zero-1")
    assert (status.phase, status.reason) == (PodPhase.FAILED, "RunAsUserNotAllowed")
    assert "runAsGroup" in status.message
    assert not (agent.data_dir / "pods" / "group-zero-1" / "logs" / "main" / "0.log").exists()


async def test_a_pod_cannot_read_or_write_another_pods_directory_or_plan(
    system: System, agent: RealNode
) -> None:
    """Attack: pod A reads pod B's ``plan.json`` (B's environment, its secrets included)
    and writes into B's working directory: every pod ran as one user and each plan was
    world-readable. Each pod runs as a uid of its own, its directory closed to others: A
    is refused both and fails, B's secret is not in A's output, B's directory is unchanged."""
    victim = job("pod-b", "sleep 60", env=[{"name": "SECRET", "value": "b-secret-4242"}])
    await publish(system, [admitted(victim), binding(victim, "pod-b-1")])
    await statuses_until(
        system,
        lambda found: any(
            isinstance(e, PodPhaseChanged)
            and e.pod_uid == "pod-b-1"
            and e.phase is PodPhase.RUNNING
            for e in found
        ),
    )
    b_dir = agent.data_dir / "pods" / "pod-b-1"
    script = f"id -u; cat {b_dir}/plan.json; echo mine > {b_dir}/work/planted; ls {b_dir}/work"
    attacker = job("pod-a", script)
    await publish(system, [admitted(attacker), binding(attacker, "pod-a-1")])
    events = await statuses_until(system, ended("pod-a-1"))
    status = final(events, "pod-a-1")
    output = (agent.data_dir / "pods" / "pod-a-1" / "logs" / "main" / "0.log").read_text()
    assert status.phase is PodPhase.FAILED, output
    assert 200000 <= int(output.split()[0]) <= 265535, output
    assert output.count("Permission denied") >= 2, output
    assert "b-secret-4242" not in output
    assert not (b_dir / "work" / "planted").exists()
    a_info = (agent.data_dir / "pods" / "pod-a-1" / "work").stat()
    b_info = (b_dir / "work").stat()
    assert a_info.st_uid != b_info.st_uid
    assert stat.S_IMODE((b_dir / "plan.json").stat().st_mode) == 0o600
    assert stat.S_IMODE((agent.data_dir / "agent.json").stat().st_mode) == 0o600


def running(uid: str) -> Callable[[list[Event]], bool]:
    return lambda events: any(
        isinstance(e, PodPhaseChanged) and e.pod_uid == uid and e.phase is PodPhase.RUNNING
        for e in events
    )


def written_pid(path: Path) -> int:
    """The pid a pod wrote to ``path`` (waited for, bounded)."""
    deadline = time.monotonic() + WAIT
    while not (path.exists() and path.read_text().strip()):
        assert time.monotonic() < deadline, f"{path} was never written"
        time.sleep(0.05)
    return int(path.read_text())


def running_pid(pid: int) -> bool:
    """Whether the process runs (a zombie waiting for its reaper does not)."""
    try:
        text = (Path("/proc") / str(pid) / "stat").read_text()
    except OSError:
        return False
    return text.rpartition(")")[2].split()[0] != "Z"


async def test_a_pod_whose_supervisor_is_killed_is_killed_before_it_is_reported_lost(
    system: System, agent: RealNode
) -> None:
    """Attack (or accident): the pod's supervisor is killed with -9, and a ``setsid``
    child of the pod is out of its container's group: the pod ran on, uncounted, after the
    agent reported it ``Lost``. The agent kills every process of the pod's cgroup first."""
    script = "setsid sh -c 'echo $$$$ > \"$HOME/child\"; exec sleep 300' & exec sleep 300"
    manifest = job("sup-killed", script)
    await publish(system, [admitted(manifest), binding(manifest, "sup-killed-1")])
    pod_dir = agent.data_dir / "pods" / "sup-killed-1"
    child_file = pod_dir / "work" / "child"
    await statuses_until(system, running("sup-killed-1"))
    child = written_pid(child_file)
    report = msgspec.json.decode((pod_dir / "status.json").read_bytes(), type=PodReport)
    main = report.containers[0].pgid
    os.kill(report.supervisor, signal.SIGKILL)
    events = await statuses_until(system, ended("sup-killed-1"))
    assert final(events, "sup-killed-1").reason == "Lost"
    assert not running_pid(main), "the container outlived its supervisor's loss"
    assert not running_pid(child), "the setsid child outlived its supervisor's loss"


async def test_a_working_dir_the_pods_user_cannot_enter_fails_the_pod(
    system: System, agent: RealNode, data_dirs: DataDirs
) -> None:
    """Attack: a container's ``workingDir`` is a directory closed to the pod's user (mode
    0700, root's): the supervisor entered it as root, before the switch to the pod's user,
    so the pod ran inside a directory its user may not enter (a check of the host's
    permissions skipped). It is entered as the pod's user: the pod fails ``StartError``
    and runs nothing there."""
    closed = data_dirs.base / "closed"
    closed.mkdir(mode=0o700)
    (closed / "inside").write_text("root's eyes only\n")
    (closed / "inside").chmod(0o644)
    manifest = job("closed-cwd", "cat inside", workingDir=str(closed))
    await publish(system, [admitted(manifest), binding(manifest, "closed-cwd-1")])
    events = await statuses_until(system, ended("closed-cwd-1"))
    status = final(events, "closed-cwd-1")
    output = (agent.data_dir / "pods" / "closed-cwd-1" / "logs" / "main" / "0.log").read_text()
    assert "root's eyes only" not in output
    assert (status.phase, status.reason) == (PodPhase.FAILED, "StartError"), output
    assert str(closed) in status.message

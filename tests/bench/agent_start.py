"""Time a node agent's work: from binding to process start, and its CPU idle and per pod.

Run: ``python -m tests.bench.agent_start [--pods 100] [--gap 0.2] [--idle 20] [--run-as USER]
[--runtime process|podman] [--volumes]``
(not collected by pytest; as root, pods run as ``nobody``, or with ``--run-as ''`` each as a
uid of its own, the agent's default). With ``--signed`` the driver
signs the job and each binding as admission and the allocator do, and the agent verifies
them (``--trust``).

On a fresh embedded broker, with no other service: one ``vcbus agent`` process (node
``bench-0``, cgroups when the host has them). The driver publishes one admitted job of
``--pods`` pods (``sh -c 'date +%s.%N'``), then one ``BindingCreated`` every ``--gap``
seconds, each stamped with the time it was sent. A pod's process start is the time its
first command printed (when its log's first line was written), so bind to start is the
agent's consumer hop, its pod loop, the supervisor's start (a Python process) and ``sh``'s;
with ``--runtime podman`` also the pod sandbox's and the container's start (and with
``--volumes``, its ``emptyDir`` and its tmpfs made and mounted in the container).

CPU is read from ``/proc/<pid>/stat``: the agent's own (user + system) over ``--idle``
seconds with nothing bound (its heartbeat, tables and consumer polls), then during the
bindings, divided by the pods; and the launcher's (which forks each supervisor, started
with the first pod). A supervisor's own CPU is not counted: it is the host init's child
once started, and its time is not added to any counter this reads.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import msgspec

from tests.bench.stats import summary_ms
from vcbus.contracts import BindingCreated, Event, JobAdmitted
from vcbus.contracts.keys import JobKey, NodeName
from vcbus.contracts.objects.job import Job
from vcbus.contracts.objects.pod import Pod
from vcbus.core.authority import (
    TRUST_FILE,
    Role,
    SigningKey,
    load_signing_key,
    manifest_digest,
    sign_admitted,
    sign_binding,
    write_keys,
)
from vcbus.core.bus.broker import start_broker
from vcbus.core.bus.kafka import AioKafkaBus
from vcbus.core.bus.kafka_settings import KafkaSettings
from vcbus.core.bus.outbox import Outbox
from vcbus.core.bus.protocol import Producer
from vcbus.core.runtime.clock import SystemClock
from vcbus.core.runtime.topology import ensure_topics
from vcbus.services.agent.face import podman

PREFIX = "bench-agent."
NODE = "bench-0"
TICKS = os.sysconf("SC_CLK_TCK")
CLOCK = SystemClock()


def cpu_seconds(pid: int) -> tuple[float, float]:
    """The process's own CPU and its reaped children's, in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    utime, stime, cutime, cstime = (int(v) for v in fields[11:15])
    return (utime + stime) / TICKS, (cutime + cstime) / TICKS


def children(pid: int) -> list[int]:
    """The process's children (the agent's: its launcher)."""
    found = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return [int(child) for child in found]


IMAGE = "localhost/vcbus-bench-busybox:1"


def build_image() -> None:
    """The busybox image the pods run in under ``--runtime podman`` (built offline)."""
    with tempfile.TemporaryDirectory() as context:
        shutil.copy("/bin/busybox", Path(context) / "busybox")
        (Path(context) / "Containerfile").write_text(
            'FROM scratch\nCOPY busybox /bin/busybox\nRUN ["/bin/busybox", "--install", "/bin"]\n'
        )
        subprocess.run([*podman.BASE, "build", "-q", "-t", IMAGE, context], check=True)


VOLUMES = [
    {"name": "scratch", "emptyDir": {}},
    {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "8Mi"}},
]
"""``--volumes``: each pod's (mounted at ``/scratch`` and ``/dev/shm``)."""


def job(pods: int, runtime: str = "process", *, volumes: bool = False) -> Job:
    container: dict[str, object] = {
        "name": "main",
        "image": IMAGE if runtime == "podman" else "busybox",
        "imagePullPolicy": "Never",
        "command": ["sh", "-c", "date +%s.%N"],
        "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
    }
    spec: dict[str, object] = {"restartPolicy": "Never", "containers": [container]}
    if volumes:
        spec["volumes"] = VOLUMES
        container["volumeMounts"] = [
            {"name": "scratch", "mountPath": "/scratch"},
            {"name": "shm", "mountPath": "/dev/shm"},
        ]
    return msgspec.convert(
        {
            "metadata": {"name": "bench", "namespace": "default"},
            "spec": {"tasks": [{"name": "t", "replicas": pods, "template": {"spec": spec}}]},
        },
        Job,
    )


async def publish(producer: Producer, events: list[Event]) -> None:
    outbox = Outbox(PREFIX)
    outbox.add_events(events)
    await producer.send(outbox.take())


async def drive(
    bootstrap: str,
    agent: subprocess.Popen[bytes],
    data: Path,
    args: argparse.Namespace,
    keys: dict[Role, SigningKey],
) -> dict[str, object]:
    bus = AioKafkaBus(KafkaSettings(bootstrap_servers=bootstrap))
    producer = bus.producer(client_id="bench-driver")
    try:
        return await _drive(producer, agent, data, args, keys)
    finally:
        await producer.stop()


async def _drive(
    producer: Producer,
    agent: subprocess.Popen[bytes],
    data: Path,
    args: argparse.Namespace,
    keys: dict[Role, SigningKey],
) -> dict[str, object]:
    now = CLOCK.now()
    key = JobKey("default/bench")
    admitted = JobAdmitted(
        event_id="bench-job",
        occurred_at=now,
        job=key,
        manifest=job(args.pods, args.runtime, volumes=args.volumes),
        spec_digest="x",
    )
    if keys:
        admitted = sign_admitted(keys[Role.ADMISSION], admitted)
    digest = manifest_digest(admitted.manifest) if keys else ""
    await publish(producer, [admitted])
    await asyncio.sleep(5)  # the agent reads the job and settles
    idle_start = cpu_seconds(agent.pid)
    await asyncio.sleep(args.idle)
    idle_end = cpu_seconds(agent.pid)
    sent: dict[str, float] = {}
    busy_start = cpu_seconds(agent.pid)
    launcher_start = 0.0  # the launcher starts with the first pod
    for index in range(args.pods):
        pod = Pod(
            name=f"bench-t-{index}",
            namespace="default",
            job=key,
            task="t",
            index=index,
            podgroup="bench",
            uid=f"bench-{index}",
            requests={"cpu": 10, "memory": 16 * 2**20},
            admitted_digest=digest,
        )
        binding = BindingCreated(
            event_id=f"bind-{index}", occurred_at=CLOCK.now(), pod=pod, node=NodeName(NODE)
        )
        if keys:
            binding = sign_binding(keys[Role.ALLOCATOR], binding)
        sent[pod.uid] = CLOCK.now().timestamp()
        await publish(producer, [binding])
        await asyncio.sleep(args.gap)
    starts: dict[str, float] = {}
    deadline = time.monotonic() + 60
    while len(starts) < args.pods and time.monotonic() < deadline:
        for uid in sent:
            if uid in starts:
                continue
            log = data / "pods" / uid / "logs" / "main" / "0.log"
            text = log.read_text() if log.exists() else ""
            if text.strip():
                starts[uid] = log.stat().st_mtime  # its first line written
        await asyncio.sleep(0.2)
    await asyncio.sleep(2)  # the last reports
    busy_end = cpu_seconds(agent.pid)
    launcher_end = sum(cpu_seconds(pid)[0] for pid in children(agent.pid))
    delays = [starts[uid] - sent[uid] for uid in starts]
    return {
        "runtime": args.runtime,
        "signed": bool(keys),
        "pods": args.pods,
        "started": len(starts),
        "gap_s": args.gap,
        "bind_to_start_ms": summary_ms(delays),
        "agent_idle_cpu_percent": round(100 * (idle_end[0] - idle_start[0]) / args.idle, 2),
        "agent_cpu_ms_per_pod": round(1000 * (busy_end[0] - busy_start[0]) / args.pods, 2),
        "launcher_cpu_ms_per_pod": round(1000 * (launcher_end - launcher_start) / args.pods, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pods", type=int, default=100)
    parser.add_argument("--gap", type=float, default=0.2, help="seconds between bindings")
    parser.add_argument("--idle", type=float, default=20.0, help="seconds of idle measured")
    parser.add_argument(
        "--run-as", default="nobody", help="the pods' user as root ['': a uid per pod]"
    )
    parser.add_argument("--signed", action="store_true", help="sign launches; the agent verifies")
    parser.add_argument(
        "--runtime", choices=("process", "podman"), default="process", help="the agent's runtime"
    )
    parser.add_argument(
        "--volumes", action="store_true", help="each pod an emptyDir and a tmpfs (podman)"
    )
    args = parser.parse_args()
    broker = start_broker()
    base = Path(tempfile.mkdtemp(prefix="vcbus-bench-agent-"))
    base.chmod(0o711)
    agent = None
    try:
        bootstrap = broker.bootstrap_servers
        asyncio.run(
            ensure_topics(AioKafkaBus(KafkaSettings(bootstrap_servers=bootstrap)), [], PREFIX, 4)
        )
        env = {**os.environ, "KAFKA_BOOTSTRAP_SERVERS": bootstrap, "VCBUS_TOPIC_PREFIX": PREFIX}
        command = [
            sys.executable,
            "-m",
            "vcbus.services.cli",
            "agent",
            "--node-name",
            NODE,
            "--data-dir",
            str(base / "data"),
            "--listen-port",
            "0",
            "--cpu",
            "64",
            "--memory",
            "64Gi",
        ]
        command += ["--runtime", args.runtime]
        if args.runtime == "podman":
            build_image()
        if os.geteuid() == 0 and args.run_as:
            command += ["--run-as", args.run_as]
        keys: dict[Role, SigningKey] = {}
        if args.signed:
            paths = write_keys(base / "keys")
            keys = {role: load_signing_key(path, role) for role, path in paths.items()}
            command += ["--trust", str(base / "keys" / TRUST_FILE)]
        agent = subprocess.Popen(
            command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        result = asyncio.run(drive(bootstrap, agent, base / "data", args, keys))
        print(json.dumps(result, indent=2))
    finally:
        if agent is not None:
            agent.terminate()
            agent.wait()
        broker.stop()
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()

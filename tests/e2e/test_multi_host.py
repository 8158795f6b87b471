"""Four hosts on one network: a gang spans two agents, one host is cut off, the job moves.

Hosts are network namespaces on a bridge the test makes (:mod:`tests.e2e.netns`): the
broker and the five services on ``ctl``, an agent on ``a`` and one on ``b``, the CLI on
``cli``. Each agent advertises its host's own address, as on real machines. A 4-rank gang
(one master, three workers) spans both agents and meets through ``MASTER_ADDR`` /
``MASTER_PORT``; ``vcbus logs`` reads a rank's log from ``cli``; host ``a`` loses its link;
its node goes NotReady, its pods end ``NodeLost``, the job's ``PodFailed -> RestartJob``
runs the gang again, all on ``b``, and the restarted ranks meet again. The node monitor's
grace period and the pod eviction timeout are 2 s here (40 s and 5 min by default).

Before that, a gang restarted (``PodFailed -> RestartJob``) and one deleted and submitted
again, each across both agents, meet at once at their own master: a rank on the host
without the master once got the previous master's port and failed to connect.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e import netns
from tests.e2e.real_nodes import (
    DataDirs,
    RealNode,
    client_env,
    delete_job,
    gang_job,
    pod_groups,
    simple_job,
    start_agent,
    wait_for_statuses,
    wait_gone,
)
from tests.e2e.system import WAIT, System, running_system, submit, wait_for_jobs
from tests.support.processes import Processes, event, service_env
from vcbus.contracts import PodPhaseChanged
from vcbus.contracts.objects.pod import PodPhase

_CANNOT = netns.unavailable()
pytestmark = [pytest.mark.timeout(300), pytest.mark.skipif(bool(_CANNOT), reason=_CANNOT)]

LIVENESS = {"VCBUS_NODE_MONITOR_GRACE_SECONDS": "2", "VCBUS_POD_EVICTION_TIMEOUT_SECONDS": "2"}
JOB = "default/spread"
BROKER_PORT = 9092

RANK = """\
import json, os, pathlib, socket, time
rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
address, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
if rank == 0:
    server = socket.create_server(("", port))
    server.settimeout(60)
    peers = []
    for _ in range(world - 1):
        peer, _ = server.accept()
        peers.append((peer, int(peer.recv(16))))
    ranks = sorted([0] + [seen for _, seen in peers])
    for peer, _ in peers:
        peer.sendall(json.dumps(ranks).encode())
        peer.close()
else:
    deadline = time.monotonic() + 60
    while True:
        try:
            peer = socket.create_connection((address, port), timeout=5)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    peer.sendall(str(rank).encode())
    ranks = json.loads(peer.recv(1024))
assert ranks == list(range(world)), ranks
print(f"rank {rank} of {world} met ranks {ranks} at {address}:{port}", flush=True)
shared = pathlib.Path(os.environ["SHARED"])
with open(shared / "met", "a") as met:
    met.write(f"{rank} {address}:{port}\\n")
if not (shared / "release").exists():
    time.sleep(600)
"""


AGAIN = """\
import json, os, pathlib, socket, sys, time
rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
address, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
shared = pathlib.Path(os.environ["SHARED"])
if rank == world - 1 and not (shared / "failed-once").exists():
    (shared / "failed-once").touch()
    sys.exit(1)
if rank == 0:
    server = socket.create_server(("", port))
    server.settimeout(60)
    peers = [server.accept()[0] for _ in range(world - 1)]
    for peer in peers:
        peer.sendall(b"met")
        peer.close()
else:
    deadline = time.monotonic() + 60
    while True:
        try:
            peer = socket.create_connection((address, port), timeout=5)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    assert peer.recv(16) == b"met"
with open(shared / "met", "a") as met:
    met.write(f"{rank} {address}:{port}\\n")
while (shared / "hold").exists():
    time.sleep(0.1)
"""


@pytest.fixture(scope="module")
def hosts() -> Iterator[netns.Hosts]:
    """Hosts ``ctl``, ``a``, ``b`` and ``cli``, removed at the end."""
    with netns.Hosts(["ctl", "a", "b", "cli"]) as made:
        yield made


@pytest.fixture(scope="module")
def system(hosts: netns.Hosts) -> Iterator[System]:
    """A broker and the five services on host ``ctl``."""
    bootstrap = f"{hosts.address('ctl')}:{BROKER_PORT}"
    with Processes() as processes:
        broker = processes.start(
            "broker",
            "vcbus.services.cli",
            "broker",
            "--host",
            hosts.address("ctl"),
            "--port",
            str(BROKER_PORT),
            env=service_env(bootstrap, ""),
            wrap=hosts.wrap("ctl"),
        )
        broker.wait_for(lambda line: "KAFKA_BOOTSTRAP_SERVERS" in str(line.get("text")))
        with running_system(
            bootstrap,
            f"e2e-{os.getpid()}-hosts.",
            cluster_args=("--nodes", "0"),
            env=LIVENESS,
            wrap=hosts.wrap("ctl"),
        ) as running_:
            yield running_


def _gang(name: str, shared: Path, program: str) -> str:
    """A gang of ``program`` ranks at 500m each, RestartJob on PodFailed."""

    def edit(job: dict[str, Any]) -> None:
        job["spec"]["policies"] = [{"event": "PodFailed", "action": "RestartJob"}]
        job["spec"]["maxRetry"] = 3
        for task in job["spec"]["tasks"]:
            spec = task["template"]["spec"]
            spec["nodeSelector"] = {"pool": "hosts"}
            spec["terminationGracePeriodSeconds"] = 1
            container = spec["containers"][0]
            container["command"] = ["python3", "-c", program]
            container["env"] = [{"name": "SHARED", "value": str(shared)}]
            container["resources"]["requests"]["cpu"] = "500m"

    return gang_job(name, edit=edit)


def _start_agents(
    processes: Processes,
    system: System,
    hosts: netns.Hosts,
    dirs: DataDirs,
    nodes: dict[str, tuple[str, str, str]],
) -> dict[str, RealNode]:
    """An agent per node ``name: (host, cpu, memory)``, at its host's address."""
    return {
        name: start_agent(
            processes,
            system,
            dirs.new(name),
            name,
            "--label",
            "pool=hosts",
            "--address",
            hosts.address(host),
            "--cpu",
            cpu,
            "--memory",
            memory,
            wrap=hosts.wrap(host),
        )
        for name, (host, cpu, memory) in nodes.items()
    }


def _running_after(statuses: list[PodPhaseChanged], uids: set[str]) -> list[PodPhaseChanged]:
    """The first Running status of each pod not among ``uids`` (a later incarnation)."""
    first: dict[str, PodPhaseChanged] = {}
    for status in statuses:
        if status.phase is PodPhase.RUNNING and status.pod_uid not in uids:
            first.setdefault(status.pod_uid, status)
    return list(first.values())


def _met(shared: Path) -> list[str]:
    path = shared / "met"
    return path.read_text().splitlines() if path.exists() else []


def _masters(statuses: list[PodPhaseChanged]) -> list[PodPhaseChanged]:
    """The first Running status of each incarnation of the master, in order."""
    return _running_after([s for s in statuses if s.task == "master"], set())


def _incarnation(statuses: list[PodPhaseChanged], number: int) -> list[PodPhaseChanged]:
    """The first Running status of each pod's ``number``-th uid (0: the first)."""
    uids: dict[str, list[str]] = {}
    for status in statuses:
        seen = uids.setdefault(status.pod, [])
        if status.pod_uid not in seen:
            seen.append(status.pod_uid)
    wanted = {seen[number] for seen in uids.values() if len(seen) > number}
    return [s for s in _running_after(statuses, set()) if s.pod_uid in wanted]


async def _wait_met(shared: Path, count: int) -> list[str]:
    deadline = time.monotonic() + WAIT
    while len(_met(shared)) < count and time.monotonic() < deadline:  # noqa: ASYNC110 - polls a file
        await asyncio.sleep(0.2)
    return _met(shared)


async def test_a_restarted_and_a_resubmitted_gang_meet_at_their_own_master_across_hosts(
    hosts: netns.Hosts, system: System
) -> None:
    key = "default/again"
    with DataDirs() as dirs, Processes() as processes:
        shared = dirs.new("shared")
        shared.chmod(0o777)
        (shared / "hold").touch()
        nodes = {"ra": ("a", "1", "8Gi"), "rb": ("b", "1", "8Gi")}  # two ranks fit each
        agents = _start_agents(processes, system, hosts, dirs, nodes)

        def tails() -> str:
            return "".join(f"\n--- {n} ---\n{a.process.tail(20)}" for n, a in agents.items())

        # the last rank fails once: RestartJob runs the gang again, spread over both hosts
        await submit(system, _gang("again", shared, AGAIN))
        met = await _wait_met(shared, 4)
        statuses = await wait_for_statuses(system, key, lambda ss: len(_masters(ss)) >= 2)
        masters = _masters(statuses)
        assert len(masters) == 2, tails()  # one restart, no second one
        current = f"{masters[-1].host_ip}:{masters[-1].ports[23456]}"
        assert sorted(met) == sorted(f"{rank} {current}" for rank in range(4)), tails()
        ranks = _incarnation(statuses, 1)
        assert len(ranks) == 4
        assert {str(s.node) for s in ranks} == {"ra", "rb"}  # the master's host and the other

        # deleted while its ranks run, then submitted again at once under the same name
        groups = [
            group
            for name, agent in agents.items()
            for group in pod_groups(
                agent.data_dir, {s.pod_uid for s in ranks if str(s.node) == name}
            )
        ]
        await delete_job(system, key)
        assert await wait_gone(groups) == []
        await submit(system, _gang("again", shared, AGAIN))
        met = await _wait_met(shared, 8)
        statuses = await wait_for_statuses(system, key, lambda ss: len(_masters(ss)) >= 3)
        masters = _masters(statuses)
        newest = f"{masters[-1].host_ip}:{masters[-1].ports[23456]}"
        assert len(met) == 8, tails()
        assert sorted(met[4:]) == sorted(f"{rank} {newest}" for rank in range(4)), tails()
        (shared / "hold").unlink()
        view = await wait_for_jobs(system, [key])
        assert view.jobs[key].phase == "Completed", tails()


async def test_vcbus_logs_says_what_is_missing_when_an_agent_serves_logs_on_its_loopback(
    hosts: netns.Hosts, system: System
) -> None:
    """Without a certificate an agent's logs endpoint listens on loopback alone, while the
    node advertises its routable address: the CLI on another host said only "Connection
    refused"."""
    with DataDirs() as dirs, Processes() as processes:
        quiet = start_agent(
            processes,
            system,
            dirs.new("quiet"),
            "quiet",
            "--label",
            "pool=quiet",
            "--address",
            hosts.address("b"),
            env={"VCBUS_AGENT_TLS_CERTFILE": "", "VCBUS_AGENT_TLS_KEYFILE": ""},
            wrap=hosts.wrap("b"),
        )
        assert quiet.process.matching(event("logs_on_loopback_only"))
        await submit(system, simple_job("quiet", "echo hello", selector={"pool": "quiet"}))
        view = await wait_for_jobs(system, ["default/quiet"])
        assert view.jobs["default/quiet"].phase == "Completed", quiet.process.tail(20)
        command = [sys.executable, "-m", "vcbus.services.cli", "logs", "quiet"]
        env = service_env(system.bootstrap, system.prefix)
        elsewhere = await asyncio.to_thread(_run, [*hosts.wrap("cli"), *command], env)
    assert elsewhere.returncode == 1
    assert "serves logs on its own loopback only" in elsewhere.stderr, elsewhere.stderr
    assert "VCBUS_AGENT_TLS_CERTFILE" in elsewhere.stderr


def _run(command: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=WAIT, check=False
    )


async def test_a_gang_across_two_hosts_survives_one_cut_off(
    hosts: netns.Hosts, system: System
) -> None:
    with DataDirs() as dirs, Processes() as processes:
        shared = dirs.new("shared")
        shared.chmod(0o777)
        nodes = {"a": ("a", "1", "16Gi"), "b": ("b", "2", "8Gi")}
        agents = _start_agents(processes, system, hosts, dirs, nodes)

        def tails() -> str:
            return "".join(f"\n--- {n} ---\n{a.process.tail(20)}" for n, a in agents.items())

        await submit(system, _gang("spread", shared, RANK))
        first = await wait_for_statuses(
            system, JOB, lambda ss: len({s.pod for s in ss if s.phase is PodPhase.RUNNING}) == 4
        )
        placed = {s.pod: str(s.node) for s in first if s.phase is PodPhase.RUNNING}
        assert sorted(set(placed.values())) == ["a", "b"], tails()
        deadline = time.monotonic() + WAIT
        while len(_met(shared)) < 4 and time.monotonic() < deadline:  # noqa: ASYNC110 - polls a file
            await asyncio.sleep(0.2)
        master = next(s for s in first if s.phase is PodPhase.RUNNING and s.task == "master")
        assert len(_met(shared)) == 4, tails()
        assert {line.split()[1] for line in _met(shared)} == {
            f"{master.host_ip}:{master.ports[23456]}"
        }

        # the CLI on its own host reads a rank's log from the agent that runs it
        logs = await asyncio.to_thread(
            subprocess.run,
            [*hosts.wrap("cli"), sys.executable, "-m", "vcbus.services.cli", "logs", "spread"],
            env=service_env(system.bootstrap, system.prefix, **client_env()),
            capture_output=True,
            text=True,
            timeout=WAIT,
            check=False,
        )
        assert logs.returncode == 0, logs.stderr
        assert logs.stdout.count("met ranks [0, 1, 2, 3]") == 4, logs.stdout + logs.stderr

        # host a loses its link; the restarted gang runs on b and meets again
        (shared / "release").touch()
        hosts.cut("a")
        cut_at = time.monotonic()
        uids = {s.pod_uid for s in first}

        def restarted(statuses: list[PodPhaseChanged]) -> bool:
            return len(_running_after(statuses, uids)) == 4

        statuses = await wait_for_statuses(system, JOB, restarted)
        view = await wait_for_jobs(system, [JOB])
        print(f"cut to ranks running again: {time.monotonic() - cut_at:.1f}s (wall)")
        assert view.jobs[JOB].phase == "Completed", tails()
        met = _met(shared)
    lost = [s for s in statuses if s.reason == "NodeLost"]
    assert sorted(str(s.node) for s in lost) == ["a"] * sum(1 for n in placed.values() if n == "a")
    again = _running_after(statuses, uids)
    assert {str(s.node) for s in again} == {"b"}
    new_master = next(s for s in again if s.task == "master")
    assert len(met) == 8  # the four ranks met again, at the new master's address and port
    assert {line.split()[1] for line in met[4:]} == {
        f"{new_master.host_ip}:{new_master.ports[23456]}"
    }
    lost_at = min(s.occurred_at for s in lost)
    back_at = max(s.occurred_at for s in again)
    print(f"NodeLost to the restarted ranks Running: {(back_at - lost_at).total_seconds():.2f}s")

"""A pod's bounds with real processes and real cgroups (v1 here, as root): no broker.

Each test is an attack a pod's own processes make on the host: outliving the pod, a fork
bomb, a log flood, a supervisor killed under it. Each runs in a runtime of its own, with
cgroups under a node name of this run's own, all removed at the end.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from vcbus.contracts.objects.pod import PodPhase
from vcbus.services.agent.app.cgroups import ROOT, detect
from vcbus.services.agent.app.runtime import HostProcesses
from vcbus.services.agent.model import ContainerRun, PodPlan, PodReport

pytestmark = [
    pytest.mark.timeout(90),
    pytest.mark.skipif(os.geteuid() != 0, reason="cgroups and users need root"),
]

PATH = {"PATH": "/usr/local/bin:/usr/bin:/bin"}
WAIT = 30.0
NODE = f"agentsec-boundaries-{os.getpid()}"
BOMB = """
import os, time
forked = 0
for _ in range(300):
    try:
        pid = os.fork()
    except OSError:
        continue
    if pid == 0:
        time.sleep(300)
        os._exit(0)
    forked += 1
print("forked", forked, flush=True)
time.sleep(300)
"""


@pytest.fixture
def base() -> Iterator[Path]:
    """A directory of its own under ``/tmp``; the node's cgroups removed afterwards."""
    path = Path(tempfile.mkdtemp(prefix="vcbus-boundaries-"))
    path.chmod(0o711)
    yield path
    shutil.rmtree(path, ignore_errors=True)
    for controller in ("memory", "cpu", "pids"):
        with_node = ROOT / controller / "vcbus" / NODE
        for leftover in with_node.glob("*/") if with_node.is_dir() else ():
            leftover.rmdir()
        if with_node.is_dir():
            with_node.rmdir()


def runtime_in(base: Path, pids_max: int | None = None) -> HostProcesses:
    cgroups, why = detect(NODE)
    assert cgroups is not None, why
    if pids_max is not None:
        cgroups = dataclasses.replace(cgroups, pids_max=pids_max)
    return HostProcesses(base / "agent", cgroups)


def sh(script: str, home: str = "/tmp") -> ContainerRun:
    return ContainerRun(name="main", argv=("sh", "-c", script), env={**PATH, "HOME": home})


def until(runtime: HostProcesses, uid: str, done: object) -> PodReport:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        report = runtime.report(uid)
        assert report is not None, "the supervisor is gone"
        if callable(done) and done(report):
            return report
        time.sleep(0.05)
    raise AssertionError(f"pod {uid}: not there in {WAIT}s: {runtime.report(uid)}")


def running(pid: int) -> bool:
    """Whether the process runs (a zombie waiting for its reaper does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def in_group(pgid: int) -> list[int]:
    found = []
    for stat_file in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat_file.read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if fields[2] == str(pgid) and fields[0] != "Z":
            found.append(int(stat_file.parent.name))
    return found


def read_pid(path: Path) -> int:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        text = path.read_text().strip() if path.exists() else ""
        if text:
            return int(text)
        time.sleep(0.05)
    raise AssertionError(f"{path} was never written")


def test_a_setsid_child_does_not_outlive_its_pod(base: Path) -> None:
    """Attack: a pod starts a process in a session of its own (``setsid``, out of its
    container's process group) and exits 0; the process would run on after the pod ended,
    its job was deleted and the agent forgot it. Every process of the pod's cgroup is
    killed when the pod ends."""
    runtime = runtime_in(base)
    try:
        script = (
            "setsid sh -c 'echo $$ > \"$HOME/child\"; exec sleep 300' & "
            'while [ ! -s "$HOME/child" ]; do sleep 0.05; done'
        )
        home = str(runtime.work_dir("escape-1"))
        plan = PodPlan(
            pod="p",
            uid="escape-1",
            restart_policy="Never",
            containers=(sh(script, home),),
        )
        runtime.start(plan, {})
        report = until(runtime, "escape-1", lambda r: r.is_final)
        assert report.phase is PodPhase.SUCCEEDED
        child = read_pid(runtime.work_dir("escape-1") / "child")
        assert not running(child), f"the setsid child {child} outlived its pod"
    finally:
        for pod in (base / "agent" / "pods").iterdir():
            runtime.forget(pod.name)
        runtime.close()


def test_a_fork_bomb_stops_at_the_pods_pids_limit(base: Path) -> None:
    """Attack: a pod forks 300 processes (a fork bomb, bounded here so that the test
    itself cannot take the host). The pod's cgroup holds at most its pids limit (64 here):
    the forks past it fail."""
    runtime = runtime_in(base, pids_max=64)
    try:
        plan = PodPlan(
            pod="p",
            uid="bomb-1",
            restart_policy="Never",
            containers=(ContainerRun(name="main", argv=(sys.executable, "-c", BOMB), env=PATH),),
        )
        runtime.start(plan, {})
        log = runtime.log_file("bomb-1", "main", 0)
        deadline = time.monotonic() + WAIT
        while b"forked" not in (log.read_bytes() if log.exists() else b""):
            assert time.monotonic() < deadline, "the loop of forks did not end"
            time.sleep(0.1)
        report = runtime.report("bomb-1")
        assert report is not None
        pgid = report.containers[0].pgid
        assert 0 < len(in_group(pgid)) <= 64
        forked = int(log.read_text().split()[-1])
        assert forked < 64, f"{forked} forks of 300 succeeded"
    finally:
        for pod in (base / "agent" / "pods").iterdir():
            runtime.forget(pod.name)
        runtime.close()


def test_a_crash_looping_pods_logs_are_bounded_per_pod_across_restarts(base: Path) -> None:
    """Attack: a pod floods its log and crashes, again and again (``restartPolicy:
    Always``): bounded per run only, each restart adds a run's worth of logs without end.
    The pod's logs, every run together, stay within its per-pod bounds (4 files, 4 KiB
    plus the file being written here)."""
    runtime = runtime_in(base)
    try:
        flood = "head -c 3000 /dev/zero | tr '\\0' x; exit 1"
        plan = PodPlan(
            pod="p",
            uid="flood-1",
            restart_policy="Always",
            containers=(sh(flood),),
            log_max_bytes=1024,
            log_max_files=2,
            log_pod_max_bytes=4096,
            log_pod_max_files=4,
        )
        runtime.start(plan, {})
        until(runtime, "flood-1", lambda r: r.restart_count >= 3)
        time.sleep(0.5)  # the last run's flood
        files = [p for p in (runtime.pod_dir("flood-1") / "logs").rglob("*") if p.is_file()]
        total = sum(p.stat().st_size for p in files)
        assert len(files) <= 4, sorted(p.name for p in files)
        assert total <= 4096 + 1024, total
    finally:
        for pod in (base / "agent" / "pods").iterdir():
            runtime.forget(pod.name)
        runtime.close()


def test_a_pod_whose_supervisor_was_killed_is_killed_before_it_is_lost(base: Path) -> None:
    """Attack (or accident): the pod's supervisor is killed with -9; its pod runs on,
    uncounted, after it is reported ``Lost``. The agent kills what is left of the pod,
    a ``setsid`` child included, once it finds the supervisor gone."""
    runtime = runtime_in(base)
    try:
        home = str(runtime.work_dir("lost-1"))
        script = "setsid sh -c 'echo $$ > \"$HOME/child\"; exec sleep 300' & exec sleep 300"
        plan = PodPlan(
            pod="p",
            uid="lost-1",
            restart_policy="Never",
            containers=(sh(script, home),),
        )
        runtime.start(plan, {})
        report = until(runtime, "lost-1", lambda r: r.ran and r.containers[0].pgid)
        child = read_pid(runtime.work_dir("lost-1") / "child")
        main = report.containers[0].pgid
        os.kill(report.supervisor, signal.SIGKILL)
        deadline = time.monotonic() + WAIT
        while runtime.report("lost-1") is not None:
            assert time.monotonic() < deadline, "the supervisor was not seen gone"
            time.sleep(0.05)
        runtime.kill("lost-1")
        assert not running(main), "the pod's container outlived its killed supervisor"
        assert not running(child), "the pod's setsid child outlived its killed supervisor"
    finally:
        for pod in (base / "agent" / "pods").iterdir():
            runtime.forget(pod.name)
        runtime.close()

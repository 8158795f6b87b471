"""``vcbus up --agent`` keeps its parts running, says why a job failed, and leaves nothing behind.

One ``vcbus up`` (its own broker, the five services, a node agent of a name of its own, no
simulated node) serves the tests of this module, in order:

- ``kill -9`` of a service and of the agent: ``up`` says each exited and restarts it, keeps
  running, and no job is lost (a running job keeps its pod, a new one completes);
- a job whose pod exits 3: ``describe`` names the pod, its exit code and reason, the policy
  that acted;
- SIGINT to ``up``'s process group (what Ctrl-C sends), twice: it exits 0, and no pod
  process, pod supervisor or agent data directory is left.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.e2e.real_nodes import simple_job
from tests.e2e.system import SERVICES
from tests.support import leftovers
from tests.support.processes import ROOT, service_env
from vcbus.services.agent.app.drain import drain
from vcbus.services.cli.up_progress import ready_services

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

WAIT = 120.0
NODE = f"e2e-upctl-{os.getpid()}"
"""The agent's node name: its pods' cgroups (``vcbus/<node>/…``) are this run's alone."""
SLEEPER = f"sleeper-{os.getpid()}"
SLEEP_SECONDS = f"{3000 + os.getpid() % 500}"
"""A pod's command (``sleep N``) no other process of the host runs, to find it by."""


class Up:
    """A running ``vcbus up`` and what it wrote."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.out_file, self.err_file = folder / "up.out", folder / "up.err"
        self.log_dir = folder / "logs"
        self.owner = leftovers.owner_mark()
        env = dict(service_env("", ""), **{leftovers.OWNER: self.owner})
        for name in ("KAFKA_BOOTSTRAP_SERVERS", "VCBUS_TOPIC_PREFIX"):
            env.pop(name)
        command = [sys.executable, "-m", "vcbus.services.cli", "up", "--agent"]
        command += ["--no-simulated-nodes", "--node-name", NODE, "--port", "0"]
        command += ["--dashboard-port", "-1", "--log-dir", str(self.log_dir)]
        command += ["--runtime", "process"]  # its pods are host processes, found by ps
        with self.out_file.open("wb") as out, self.err_file.open("wb") as err:
            self.process = subprocess.Popen(
                command,
                env=env,
                cwd=ROOT,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,  # a group of its own, as a shell's foreground job
            )
        self.env = env
        self.data_dir = Path(self.wait_for(r"its pods' data in (\S+)$").group(1))
        exported = self.wait_for(r"export (KAFKA_BOOTSTRAP_SERVERS=.*)").group(1)
        exported += " " + self.wait_for(r"export (VCBUS_AGENT_TLS_CAFILE=.*)").group(1)
        pairs = dict(pair.split("=", 1) for pair in exported.split())
        self.env = dict(env, **pairs)

    def output(self) -> str:
        return self.out_file.read_text() + self.err_file.read_text()

    def wait_for(self, pattern: str, timeout: float = WAIT) -> re.Match[str]:
        """The first match of ``pattern`` in what ``up`` wrote."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            exited = self.process.poll() is not None
            found = re.search(pattern, self.output(), re.M)
            if found:
                return found
            assert not exited, f"up exited:\n{self.output()}"
            time.sleep(0.2)
        raise AssertionError(f"no {pattern!r} within {timeout:g}s:\n{self.output()}")

    def wait_ready(self) -> None:
        deadline = time.monotonic() + WAIT
        agent_log = self.log_dir / "agent.log"
        while time.monotonic() < deadline:
            registered = agent_log.exists() and "node_registered" in agent_log.read_text()
            if registered and len(ready_services(self.log_dir, list(SERVICES))) == len(SERVICES):
                return
            time.sleep(0.5)
        raise AssertionError(f"services not ready:\n{self.output()}")

    def vcbus(self, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "vcbus.services.cli", *args],
            env=self.env,
            cwd=ROOT,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=WAIT,
            check=False,
        )

    def job_phase(self, name: str) -> str:
        done = self.vcbus("get", "jobs", name, "-o", "json")
        if done.returncode != 0:
            return ""
        items = json.loads(done.stdout)["items"]
        return str(items[0]["phase"]) if items else ""

    def wait_phase(self, name: str, phase: str) -> None:
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            if self.job_phase(name) == phase:
                return
            time.sleep(1.0)
        raise AssertionError(f"{name} not {phase} (is {self.job_phase(name)!r}):\n{self.output()}")

    def child(self, *words: str) -> int:
        """The pid of ``up``'s child whose command line holds ``words``."""
        for pid in children_of(self.process.pid):
            argv = command_line(pid)
            if all(word in argv for word in words):
                return pid
        raise AssertionError(f"no child of up runs {words}")


def children_of(pid: int) -> list[int]:
    found = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            text = status.read_text()
        except OSError:
            continue
        if re.search(rf"^PPid:\s+{pid}$", text, re.M) and "State:\tZ" not in text:
            found.append(int(status.parent.name))
    return found


def command_line(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
    except OSError:
        return []


def live(pid: int) -> bool:
    try:
        return "State:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False


def pods_of(*words: str) -> list[int]:
    """The live processes whose command line is ``words``."""
    return [
        int(path.name)
        for path in Path("/proc").glob("[0-9]*")
        if command_line(int(path.name))[: len(words)] == list(words) and live(int(path.name))
    ]


def supervisors_in(data_dir: Path) -> list[int]:
    """Pod supervisors (``vcbus-supervise``) working in ``data_dir``."""
    found = []
    for path in Path("/proc").glob("[0-9]*"):
        try:
            comm = (path / "comm").read_text().strip()
            cwd = os.readlink(path / "cwd")
        except OSError:
            continue
        if comm == "vcbus-supervise" and cwd.startswith(str(data_dir)):
            found.append(int(path.name))
    return found


@pytest.fixture(scope="module")
def up(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Up]:
    running = Up(tmp_path_factory.mktemp("up"))
    try:
        running.wait_ready()
        yield running
    finally:
        if running.process.poll() is None:
            os.killpg(running.process.pid, signal.SIGKILL)
            running.process.wait()
        if running.data_dir.exists():  # a test failed before up removed it
            drain(running.data_dir)
            shutil.rmtree(running.data_dir, ignore_errors=True)
        leftovers.end_owned(running.owner)  # its broker and services: sessions of their own


def test_a_killed_service_and_a_killed_agent_are_restarted_and_no_job_is_lost(up: Up) -> None:
    submitted = up.vcbus("submit", "-", stdin=simple_job(SLEEPER, f"exec sleep {SLEEP_SECONDS}"))
    assert submitted.returncode == 0, submitted.stderr
    up.wait_phase(SLEEPER, "Running")
    (pod,) = pods_of("sleep", SLEEP_SECONDS)

    for words, name in ((("serve", "job-controller"), "job-controller"), (("agent",), "agent")):
        os.kill(up.child(*words), signal.SIGKILL)
        up.wait_for(rf"^{name} exited \(signal 9 \(SIGKILL\)\); restarting it in")
        up.wait_for(rf"^{name} restarted \(pid \d+, restart 1\)$")

    assert up.process.poll() is None
    assert live(pod)  # the running job's pod ran on through both
    assert up.job_phase(SLEEPER) == "Running"
    quick = f"quick-{os.getpid()}"
    submitted = up.vcbus("submit", "-", stdin=simple_job(quick, "echo done"))
    assert submitted.returncode == 0, submitted.stderr
    up.wait_phase(quick, "Completed")  # the restarted controller and agent take new work


def test_a_failed_job_says_which_pod_failed_and_the_pod_its_policy_killed_keeps_its_log(
    up: Up,
) -> None:
    name = f"fails-{os.getpid()}"
    script = 'echo "rank $HOSTNAME here"; case $HOSTNAME in *-0) exit 3;; esac; exec sleep 600'
    job = yaml.safe_load(
        simple_job(
            name, script, replicas=2, policies=[{"event": "PodFailed", "action": "RestartJob"}]
        )
    )
    job["spec"]["maxRetry"] = 1
    submitted = up.vcbus("submit", "-", stdin=yaml.safe_dump(job))
    assert submitted.returncode == 0, submitted.stderr
    up.wait_phase(name, "Failed")

    described = up.vcbus("describe", "job", name)

    assert described.returncode == 0, described.stderr
    lines = described.stdout.splitlines()
    start = lines.index("Failed Pods:")
    row = lines[start + 2].split()
    assert row[:6] == [f"{name}-task-0", "task", "0", NODE, "3", "Error"], described.stdout
    (policy,) = [line for line in lines if line.startswith("Policy:")]
    assert "PodFailed -> RestartJob (job); maxRetry 1, retried 1" in policy, described.stdout
    acted = lines.index("Policy Actions:")
    actions = lines[acted + 2 : lines.index("", acted) if "" in lines[acted:] else None]
    assert any("maxRetry 1 reached" in line for line in actions), described.stdout
    wide = up.vcbus("get", "pods", "-o", "wide")
    rows = [line.split() for line in wide.stdout.splitlines() if f"{name}-task-0" in line]
    assert [r[-2:] for r in rows] in ([["3", "Error"]], []), wide.stdout  # [] once deleted
    # the rank the policy killed: its log stays readable with --previous
    deadline = time.monotonic() + WAIT
    while True:
        logs = up.vcbus("logs", name, "--index", "1", "--previous")
        if logs.returncode == 0 or time.monotonic() > deadline:
            break
        time.sleep(1.0)  # until its agent has stopped and forgotten it
    assert (logs.returncode, logs.stdout) == (0, f"rank {name}-task-1 here\n"), logs.stderr


def test_ctrl_c_stops_the_pods_their_supervisors_and_removes_the_agent_directory(up: Up) -> None:
    assert pods_of("sleep", SLEEP_SECONDS)
    assert supervisors_in(up.data_dir)

    os.killpg(up.process.pid, signal.SIGINT)
    up.wait_for(r"^stopping: ")
    with contextlib.suppress(ProcessLookupError):  # Ctrl-C again: it stops all the same
        os.killpg(up.process.pid, signal.SIGINT)

    assert up.process.wait(timeout=WAIT) == 0, up.output()
    assert pods_of("sleep", SLEEP_SECONDS) == []
    assert supervisors_in(up.data_dir) == []
    assert not up.data_dir.exists()
    assert re.search(r"^agent: stopped its \d+ pod\(s\)$", up.output(), re.M), up.output()

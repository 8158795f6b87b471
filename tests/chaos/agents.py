"""The chaos run's real nodes: node agents (``vcbus agent``) beside the simulated nodes.

Each agent runs one node (``real-0``, ``real-1`` ...) with a data directory of its own
under one base (a new folder in the system's temporary directory, searchable by the
pods' user), labelled and tainted :data:`~tests.chaos.workload.REAL_LABEL` /
:data:`~tests.chaos.workload.REAL_TAINT`, so only the workload's real jobs (which select
and tolerate them) land there. Pods run as ``nobody`` when the run is root (as the e2e
tests' agents do), as the run's own user otherwise; each agent's host ports come from a
range no other listener on this machine holds when the run starts.

A pod's processes are known by where they run: its supervisor's working directory is the
pod's directory and its containers' is the pod's ``work`` directory (their ``HOME`` too),
all under the base. :func:`pod_processes` finds every process of the run's pods that
still runs; :func:`check_pods_left` says which outlived the run's jobs.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from tests.chaos.history import History, Violation
from vcbus.contracts import PodDeleted, PodPhaseChanged
from vcbus.contracts.objects.pod import PodPhase

PORTS_PER_AGENT = 20
PORTS_FIRST = 30000
PORTS_LAST = 32767
"""The agents' host ports come from here (below the ephemeral ports, as the agent's own
default range)."""
HEARTBEAT_SECONDS = 2.0
"""Seconds between an agent's heartbeats (10 by default): a restarted agent is seen
alive again soon, far within the node monitor's 40 s grace."""


def agents_base() -> Path:
    """A new, empty base for the agents' data directories, searchable (not readable) by all:
    the pods' user must reach its pods' directories under it."""
    base = Path(tempfile.mkdtemp(prefix="vcbus-chaos-agents-"))
    base.chmod(0o711)
    return base


def _free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind(("0.0.0.0", port))  # a pod's host port is bound on every address
        except OSError:
            return False
    return True


def free_port_ranges(
    count: int, size: int = PORTS_PER_AGENT, start: int | None = None
) -> list[str]:
    """``count`` ranges of ``size`` host ports (``first-last``), each port free now.

    The search starts at an offset of this process's own (``start``), so two runs at once
    on one machine look in different places first; a port already bound is skipped.
    """
    span = PORTS_LAST - PORTS_FIRST + 1
    offset = (os.getpid() * size) % span if start is None else start - PORTS_FIRST
    ranges: list[str] = []
    run: list[int] = []
    for step in range(span):
        port = PORTS_FIRST + (offset + step) % span
        if run and port != run[-1] + 1:
            run = []
        run = [*run, port] if _free(port) else []
        if len(run) == size:
            ranges.append(f"{run[0]}-{run[-1]}")
            run = []
            if len(ranges) == count:
                return ranges
    raise RuntimeError(f"no {count} ranges of {size} free ports in {PORTS_FIRST}-{PORTS_LAST}")


def agent_args(
    node: str,
    data_dir: Path,
    port_range: str,
    *,
    cpu: str,
    memory: str,
    label: tuple[str, str],
    taint: str,
) -> tuple[str, ...]:
    """``vcbus agent``'s arguments for one node of the run."""
    args = [
        "--node-name",
        node,
        "--data-dir",
        str(data_dir),
        "--cpu",
        cpu,
        "--memory",
        memory,
        "--label",
        f"{label[0]}={label[1]}",
        "--taint",
        taint,
        "--heartbeat",
        f"{HEARTBEAT_SECONDS:g}",
        "--listen-port",
        "0",
        "--port-range",
        port_range,
        "--runtime",
        "process",
    ]
    if os.geteuid() == 0:
        args += ["--run-as", "nobody"]
    return tuple(args)


@dataclass(frozen=True, slots=True)
class PodProcess:
    """A process of one of the run's pods: its pid, name and working directory."""

    pid: int
    name: str
    cwd: str


def _read(path: Path) -> bytes:
    with contextlib.suppress(OSError):
        return path.read_bytes()
    return b""


def pod_processes(base: Path, proc: Path = Path("/proc")) -> list[PodProcess]:
    """Every live process whose working directory or environment lies under ``base``
    (a pod's supervisor or one of its containers' processes), by pid. Zombies aside."""
    marker = str(base).encode()
    found: list[PodProcess] = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cwd = os.readlink(entry / "cwd")
        except OSError:
            cwd = ""
        if not cwd.startswith(str(base)) and marker not in _read(entry / "environ"):
            continue
        stat = _read(entry / "stat").decode(errors="replace")
        state = stat.rpartition(")")[2].split()[:1]
        if state == ["Z"] or not stat:
            continue
        name = _read(entry / "comm").decode(errors="replace").strip()
        found.append(PodProcess(int(entry.name), name, cwd))
    return sorted(found, key=lambda p: p.pid)


def check_pods_left(left: Sequence[PodProcess]) -> list[Violation]:
    """No process of a pod outlives the run's jobs: ``left``, found once every job was
    final (and the wait for their pods to end was over), are violations."""
    return [
        Violation("pods-left", f"pid {p.pid} ({p.name}) in {p.cwd or '?'} runs on") for p in left
    ]


def kill_pods(base: Path) -> list[PodProcess]:
    """SIGKILL every process of the run's pods still running (a run ends with none); the
    processes that were killed."""
    found = pod_processes(base)
    for process in found:
        with contextlib.suppress(OSError):
            os.kill(process.pid, signal.SIGKILL)
    return found


def node_names(count: int) -> Iterator[str]:
    """The agents' node names: ``real-0``, ``real-1`` ..."""
    return (f"real-{number}" for number in range(count))


def running_on(history: History, node: str, at: datetime) -> int:
    """How many pods ran on ``node`` at ``at``: reported ``Running`` there before, neither
    ended nor deleted by then (what an agent killed at that moment had running)."""
    started: dict[str, datetime] = {}
    ended: dict[str, datetime] = {}
    for event in history.pods_status:
        if not isinstance(event, PodPhaseChanged) or event.node != node or not event.pod_uid:
            continue
        if event.phase is PodPhase.RUNNING:
            started.setdefault(event.pod_uid, event.occurred_at)
        elif event.phase in (PodPhase.SUCCEEDED, PodPhase.FAILED):
            ended.setdefault(event.pod_uid, event.occurred_at)
    for deleted in history.pods:
        if isinstance(deleted, PodDeleted) and deleted.pod_uid in started:
            ended[deleted.pod_uid] = min(
                ended.get(deleted.pod_uid, deleted.occurred_at), deleted.occurred_at
            )
    return sum(
        1 for uid, began in started.items() if began <= at and (uid not in ended or ended[uid] > at)
    )

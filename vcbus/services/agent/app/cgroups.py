"""Each pod's cgroup: its cpu quota, memory limit and pids limit, on cgroup v2 or v1.

I/O (the agent's shell uses it; the supervisor joins each container to the directories
made here before the container executes). :func:`detect` finds what the host offers: with
root, cgroup v2 (one tree, ``cgroup.controllers`` lists ``cpu`` and ``memory``) or v1 (the
``memory`` and ``cpu`` hierarchies, and ``pids`` where the host has it); without either the
agent still runs pods and says that limits are not enforced. A pod's cgroup is
``vcbus/<node>/<pod uid>`` under each hierarchy (the uid checked by
:mod:`vcbus.services.agent.validate`: one path component, never ``..``).

Limits (from ``vcbus.services.agent.launch``): cpu as a CFS quota of ``millis/1000`` periods
(``cpu.max`` on v2, ``cpu.cfs_quota_us`` on v1, as the kubelet sets them), memory as the
limit (``memory.max``, ``memory.limit_in_bytes``; swap held to it too where the kernel
counts it), so a pod over its memory is killed by the kernel, not swapped; the number of
its processes and threads as ``pids.max`` (:data:`DEFAULT_PIDS_MAX` unless ``--pids-limit``
says otherwise), so a fork bomb stops at it.

:meth:`Cgroups.kill` ends a pod's processes for good: SIGKILL to every process its cgroup
lists, again until none is left (a process forking meanwhile is listed at the next look;
the pids limit bounds them), then the cgroup is removed. The supervisor does it when its pod
ends; the agent when it forgets a pod and when it finds a pod's supervisor gone.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

CPU_PERIOD_US = 100_000
"""The CFS period the kubelet uses (100 ms)."""
ROOT = Path("/sys/fs/cgroup")
DEFAULT_PIDS_MAX = 1024
"""The processes and threads one pod may hold at once (``pids.max``)."""
KILL_WAIT = 5.0
"""How long the processes of a killed cgroup may take to be gone."""


@dataclass(frozen=True, slots=True)
class Cgroups:
    """Where this agent's pods' cgroups go: one base per hierarchy, and the version."""

    version: int
    bases: tuple[Path, ...]
    root: Path = ROOT
    pids_max: int = DEFAULT_PIDS_MAX
    """``pids.max`` of each pod (0: none), where the host has the ``pids`` controller."""

    def create(self, uid: str, cpu_millis: int, memory_bytes: int) -> tuple[str, ...]:
        """Make the pod's cgroup with its limits; its directories."""
        dirs = []
        for base in self.bases:
            directory = base / _component(uid)
            directory.mkdir(exist_ok=True)
            dirs.append(directory)
            controller = base.relative_to(self.root).parts[0]
            if self.version == 2:
                if memory_bytes:
                    _write(directory / "memory.max", str(memory_bytes))
                    _write(directory / "memory.swap.max", "0", optional=True)
                if cpu_millis:
                    _write(directory / "cpu.max", f"{cpu_millis * 100} {CPU_PERIOD_US}")
                if self.pids_max:
                    _write(directory / "pids.max", str(self.pids_max), optional=True)
            elif controller == "pids":
                if self.pids_max:
                    _write(directory / "pids.max", str(self.pids_max))
            elif controller == "memory":
                if memory_bytes:
                    _write(directory / "memory.limit_in_bytes", str(memory_bytes))
                    _write(
                        directory / "memory.memsw.limit_in_bytes", str(memory_bytes), optional=True
                    )
            elif controller == "cpu" and cpu_millis:
                _write(directory / "cpu.cfs_period_us", str(CPU_PERIOD_US))
                _write(directory / "cpu.cfs_quota_us", str(cpu_millis * 100))
        return tuple(str(d) for d in dirs)

    def kill(self, uid: str) -> int:
        """SIGKILL every process of the pod's cgroup until none is left, then remove it.

        How many processes were killed.
        """
        dirs = [base / _component(uid) for base in self.bases]
        return kill_cgroup(dirs)

    def remove(self, uid: str) -> None:
        """Remove the pod's cgroup (once its processes are gone; a busy one is retried)."""
        remove_dirs([base / _component(uid) for base in self.bases])


def cgroup_procs(dirs: list[Path]) -> set[int]:
    """The processes the cgroup directories list (a zombie is no longer listed)."""
    found: set[int] = set()
    for directory in dirs:
        with contextlib.suppress(OSError, ValueError):
            found.update(int(pid) for pid in (directory / "cgroup.procs").read_text().split())
    return found


def oom_kills(dirs: Sequence[str], version: int) -> int:
    """How many processes the kernel killed in the cgroup for its memory limit (v1 or v2)."""
    for directory in dirs:
        name = "memory.oom_control" if version == 1 else "memory.events"
        path = Path(directory) / name
        if version == 1 and "/memory/" not in f"{directory}/":
            continue
        with contextlib.suppress(OSError, ValueError):
            for line in path.read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
    return 0


def kill_cgroup(dirs: list[Path], wait: float = KILL_WAIT, *, reap: bool = False) -> int:
    """SIGKILL what the cgroup directories list, again until empty (``wait`` at most), rmdir.

    ``reap``: reap any child that ended (a subreaper's orphans: the pod's supervisor, none of
    whose own children is left to wait for). How many processes were killed.
    """
    killed: set[int] = set()
    until = time.monotonic() + wait
    while True:
        left = cgroup_procs(dirs)
        if not left or time.monotonic() >= until:
            break
        for pid in left:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        killed |= left
        if reap:
            with contextlib.suppress(ChildProcessError):
                while os.waitpid(-1, os.WNOHANG)[0]:
                    pass
        time.sleep(0.005)
    remove_dirs(dirs)
    return len(killed)


def remove_dirs(dirs: list[Path]) -> None:
    """Remove cgroup directories (a busy one is retried a second at most)."""
    for directory in dirs:
        for _ in range(20):
            try:
                directory.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.05)


def _component(uid: str) -> str:
    """``uid`` as one directory name; refused when it would be more or less than one."""
    if not uid or uid in (".", "..") or "/" in uid or "\x00" in uid:
        raise ValueError(f"pod uid {uid!r} cannot name a cgroup")
    return uid


def detect(
    node: str, root: Path = ROOT, pids_max: int = DEFAULT_PIDS_MAX
) -> tuple[Cgroups | None, str]:
    """The cgroups this agent can use, or None and why not."""
    if os.geteuid() != 0:
        return None, "the agent is not root"
    controllers = root / "cgroup.controllers"
    try:
        if controllers.exists():
            names = controllers.read_text().split()
            if not {"cpu", "memory"} <= set(names):
                return None, f"cgroup v2 lacks cpu or memory ({' '.join(names)})"
            wanted = "+cpu +memory" + (" +pids" if "pids" in names else "")
            base = root / "vcbus"
            base.mkdir(exist_ok=True)
            _write(root / "cgroup.subtree_control", wanted, optional=True)
            _write(base / "cgroup.subtree_control", wanted)
            pods = base / node
            pods.mkdir(exist_ok=True)
            _write(pods / "cgroup.subtree_control", wanted)
            return Cgroups(2, (pods,), root, pids_max), ""
        bases = []
        for controller in ("memory", "cpu", "pids"):
            hierarchy = root / controller
            if not hierarchy.is_dir():
                if controller == "pids":
                    continue  # no pids limit: the kernel's own bounds hold
                return None, f"no cgroup v2 and no v1 {controller} hierarchy under {root}"
            base = hierarchy / "vcbus" / node
            base.mkdir(parents=True, exist_ok=True)
            bases.append(base)
        return Cgroups(1, tuple(bases), root, pids_max), ""
    except OSError as exc:
        return None, f"cannot make cgroups under {root}: {exc}"


def _write(path: Path, value: str, *, optional: bool = False) -> None:
    try:
        path.write_text(value)
    except OSError:
        if not optional:
            raise

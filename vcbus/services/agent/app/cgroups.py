"""Each pod's cgroup: its cpu quota and memory limit, on cgroup v2 or v1.

I/O (the agent's shell uses it; the supervisor joins each container to the directories
made here before the container executes). :func:`detect` finds what the host offers: with
root, cgroup v2 (one tree, ``cgroup.controllers`` lists ``cpu`` and ``memory``) or v1 (the
``memory`` and ``cpu`` hierarchies); without either the agent still runs pods and says that
limits are not enforced. A pod's cgroup is ``vcbus/<node>/<pod uid>`` under each hierarchy.

Limits (from ``vcbus.services.agent.launch``): cpu as a CFS quota of ``millis/1000`` periods
(``cpu.max`` on v2, ``cpu.cfs_quota_us`` on v1, as the kubelet sets them), memory as the
limit (``memory.max``, ``memory.limit_in_bytes``; swap held to it too where the kernel
counts it), so a pod over its memory is killed by the kernel, not swapped.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

CPU_PERIOD_US = 100_000
"""The CFS period the kubelet uses (100 ms)."""
ROOT = Path("/sys/fs/cgroup")


@dataclass(frozen=True, slots=True)
class Cgroups:
    """Where this agent's pods' cgroups go: one base per hierarchy, and the version."""

    version: int
    bases: tuple[Path, ...]
    root: Path = ROOT

    def create(self, uid: str, cpu_millis: int, memory_bytes: int) -> tuple[str, ...]:
        """Make the pod's cgroup with its limits; its directories."""
        dirs = []
        for base in self.bases:
            directory = base / uid
            directory.mkdir(parents=True, exist_ok=True)
            dirs.append(directory)
            if self.version == 2:
                if memory_bytes:
                    _write(directory / "memory.max", str(memory_bytes))
                    _write(directory / "memory.swap.max", "0", optional=True)
                if cpu_millis:
                    _write(directory / "cpu.max", f"{cpu_millis * 100} {CPU_PERIOD_US}")
            elif base.relative_to(self.root).parts[0] == "memory":
                if memory_bytes:
                    _write(directory / "memory.limit_in_bytes", str(memory_bytes))
                    _write(
                        directory / "memory.memsw.limit_in_bytes", str(memory_bytes), optional=True
                    )
            elif cpu_millis:
                _write(directory / "cpu.cfs_period_us", str(CPU_PERIOD_US))
                _write(directory / "cpu.cfs_quota_us", str(cpu_millis * 100))
        return tuple(str(d) for d in dirs)

    def remove(self, uid: str) -> None:
        """Remove the pod's cgroup (once its processes are gone; a busy one is retried)."""
        for base in self.bases:
            directory = base / uid
            for _ in range(20):
                try:
                    directory.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.05)


def detect(node: str, root: Path = ROOT) -> tuple[Cgroups | None, str]:
    """The cgroups this agent can use, or None and why not."""
    if os.geteuid() != 0:
        return None, "the agent is not root"
    controllers = root / "cgroup.controllers"
    try:
        if controllers.exists():
            names = controllers.read_text().split()
            if not {"cpu", "memory"} <= set(names):
                return None, f"cgroup v2 lacks cpu or memory ({' '.join(names)})"
            base = root / "vcbus"
            base.mkdir(exist_ok=True)
            _write(root / "cgroup.subtree_control", "+cpu +memory", optional=True)
            _write(base / "cgroup.subtree_control", "+cpu +memory")
            pods = base / node
            pods.mkdir(exist_ok=True)
            _write(pods / "cgroup.subtree_control", "+cpu +memory")
            return Cgroups(2, (pods,), root), ""
        bases = []
        for controller in ("memory", "cpu"):
            hierarchy = root / controller
            if not hierarchy.is_dir():
                return None, f"no cgroup v2 and no v1 {controller} hierarchy under {root}"
            base = hierarchy / "vcbus" / node
            base.mkdir(parents=True, exist_ok=True)
            bases.append(base)
        return Cgroups(1, tuple(bases), root), ""
    except OSError as exc:
        return None, f"cannot make cgroups under {root}: {exc}"


def _write(path: Path, value: str, *, optional: bool = False) -> None:
    try:
        path.write_text(value)
    except OSError:
        if not optional:
            raise

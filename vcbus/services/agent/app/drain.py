"""Stop every pod of an agent's data directory for good: the end of ``vcbus up``'s own node.

A node agent leaves its pods running when it stops (their supervisors outlive it, see
:mod:`vcbus.services.agent.app.runtime`). ``vcbus up --agent`` is a node whose cluster
ends with it (its broker keeps everything in memory), so at its end it stops its pods as
an eviction does: SIGTERM to each pod's supervisor, which sends SIGTERM to the pod's
process groups, waits the pod's ``terminationGracePeriodSeconds`` and SIGKILLs them; a
supervisor still alive past the longest grace (and a margin) is SIGKILLed with what is
left of its pod (process groups, cgroup), and each pod's directory is removed.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

import msgspec

from vcbus.services.agent.app.cgroups import cgroup_procs
from vcbus.services.agent.app.runtime import PODS_DIR, HostProcesses
from vcbus.services.agent.app.supervisor import PLAN_FILE
from vcbus.services.agent.model import PodPlan

MARGIN_SECONDS = 5.0
"""How long past the longest grace period a supervisor may take to end by itself."""
DEFAULT_GRACE = 30.0
"""The grace of a pod whose plan cannot be read (Kubernetes' default)."""
POLL = 0.05

_plan_decoder = msgspec.json.Decoder(PodPlan)


def _plan(pod_dir: Path) -> PodPlan | None:
    with contextlib.suppress(OSError, msgspec.DecodeError):
        return _plan_decoder.decode((pod_dir / PLAN_FILE).read_bytes())
    return None


def drain(data_dir: Path) -> list[str]:
    """Stop and remove every pod under ``data_dir``; the uids of those it found.

    It ends once each supervisor is gone: by itself within its grace, else killed.
    """
    pods = data_dir / PODS_DIR
    if not pods.is_dir():
        return []
    runtime = HostProcesses(data_dir, None)
    plans = {path.name: _plan(path) for path in sorted(pods.iterdir()) if path.is_dir()}
    for uid in plans:
        runtime.stop(uid)
    grace = max(
        (plan.grace_seconds if plan else DEFAULT_GRACE for plan in plans.values()), default=0.0
    )
    deadline = time.monotonic() + grace + MARGIN_SECONDS
    while any(runtime.alive(uid) for uid in plans) and time.monotonic() < deadline:
        time.sleep(POLL)
    for uid, plan in plans.items():
        runtime.forget(uid)  # SIGKILLs a supervisor still alive and its pod's groups
        if plan is None:
            continue
        for pid in cgroup_procs([Path(d) for d in plan.limits.dirs]):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        _remove_dirs(plan.limits.dirs)
    return list(plans)


def _remove_dirs(dirs: tuple[str, ...]) -> None:
    """Remove a pod's cgroup directories, once their killed processes are gone (bounded)."""
    until = time.monotonic() + MARGIN_SECONDS
    left = [directory for directory in dirs if os.path.isdir(directory)]
    while left and time.monotonic() < until:
        for directory in list(left):
            with contextlib.suppress(OSError):
                os.rmdir(directory)
                left.remove(directory)
        if left:
            time.sleep(POLL)

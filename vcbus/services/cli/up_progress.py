"""What ``vcbus up`` says while it runs: services starting and ready, the demo's progress.

Lines written from the services' logs (:data:`READY_MARKS`) and from the live view
(:class:`~vcbus.core.views.live.StatusView`); :mod:`vcbus.services.cli.up` runs them.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections import Counter
from pathlib import Path

from vcbus.core.node_lifecycle import reader_conf
from vcbus.core.runtime.clock import SystemClock
from vcbus.core.views.live import StatusView, jobs_table, nodes_table
from vcbus.services.cli import terminal
from vcbus.services.cli.supervise import Health

READY_MARKS = (b"partitions_assigned", b"lease_acquired")
"""What a service logs once it handles records: its consumer has its partitions, or (a
singleton) it holds the lease."""
READY_READ_BYTES = 1 << 20
"""How much of a service's log is read for :data:`READY_MARKS` (it comes early)."""
STARTUP_WAIT_SECONDS = 60.0
"""How long ``up --demo`` waits for its services before it submits the demo all the same."""


def ready_services(log_dir: Path, names: list[str]) -> list[str]:
    """The services of ``names`` whose log in ``log_dir`` says they have their partitions."""
    ready = []
    for name in names:
        try:
            with (log_dir / f"{name}.log").open("rb") as log:
                text = log.read(READY_READ_BYTES)
        except OSError:
            continue
        if any(mark in text for mark in READY_MARKS):
            ready.append(name)
    return ready


def starting_line(names: list[str], ready: list[str]) -> str:
    """``starting services: cluster, admission… (3/5 ready)``: those not ready yet."""
    waiting = [name for name in names if name not in ready]
    return f"starting services: {', '.join(waiting)}… ({len(ready)}/{len(names)} ready)"


def waiting_lines(view: StatusView, keys: list[str]) -> dict[str, str]:
    """Each Pending job of ``keys`` with a reason: ``default/big waits: GangUnschedulable …``."""
    lines = {}
    for key in keys:
        job = view.jobs.get(key)
        reason = view.reason(key) if job is not None and job.phase == "Pending" else ""
        if reason:
            lines[key] = f"{key} waits: {reason}"
    return lines


async def await_services(log_dir: Path, names: list[str], clock: SystemClock) -> None:
    """Say which services are still starting, until all are ready or the wait is over."""
    deadline = clock.monotonic() + STARTUP_WAIT_SECONDS
    shown = ""
    while True:
        ready = ready_services(log_dir, names)
        if len(ready) == len(names):
            terminal.write(f"services ready: {', '.join(names)}\n")
            return
        if (line := starting_line(names, ready)) != shown:
            terminal.write(line + "\n")
            shown = line
        if clock.monotonic() > deadline:
            terminal.write(f"{shown}: going on without waiting longer\n")
            return
        await asyncio.sleep(0.5)


class DemoProgress:
    """The demo's lines: its jobs' phase counts, and why a job waits, each as it changes."""

    def __init__(self, keys: list[str]) -> None:
        self._keys = keys
        self._counts = ""
        self._waits: dict[str, str] = {}

    def show(self, view: StatusView) -> None:
        """Write what changed since the last call."""
        if (line := f"demo: {phase_counts(view, self._keys)}\n") != self._counts:
            terminal.write(line)
            self._counts = line
        waits = waiting_lines(view, self._keys)
        terminal.write(
            "".join(
                f"demo: {text}\n" for key, text in waits.items() if self._waits.get(key) != text
            )
        )
        self._waits = waits


def phase_counts(view: StatusView, keys: list[str]) -> str:
    """How many of ``keys`` are in each phase: ``3 jobs: Pending 1, Running 2``."""
    counts = Counter(view.jobs[key].phase if key in view.jobs else "Submitted" for key in keys)
    phases = ", ".join(f"{phase} {count}" for phase, count in sorted(counts.items()))
    return f"{len(keys)} jobs: {phases}"


def health_line(health: dict[str, Health]) -> str:
    """The live view's line of what ``up`` runs: all running, or each one that is not or was not."""
    troubled = {name: each for name, each in health.items() if each.text() != "running"}
    if not troubled:
        return f"services: {len(health)} running\n"
    return (
        "services: " + "; ".join(f"{name} {each.text()}" for name, each in troubled.items()) + "\n"
    )


def demo_summary(view: StatusView, submitted: list[str]) -> int:
    """Print the final tables and the verdict; 0 when every demo job completed."""
    now = SystemClock().now()
    table = nodes_table(view, now=now, lifecycle=reader_conf(os.environ))
    sys.stdout.write("\n" + jobs_table(view) + "\n\n" + table + "\n")
    done = all(str(view.jobs[key].phase) == "Completed" for key in submitted if key in view.jobs)
    finished = view.all_final(submitted)
    verdict = "all jobs completed" if finished and done else "not all jobs completed"
    sys.stdout.write(f"\ndemo: {verdict}\n")
    return 0 if finished and done else 1

"""CPU load beside a chaos run: one busy process per core, each busy a fixed share of the time.

Each hog spins for ``duty`` of every 100 ms and sleeps the rest, so ``--load 0.75`` keeps
three quarters of every core busy whatever the system does; the services get the rest, as
they would beside another tenant's work. A hog exits by itself when the run that started
it is gone (it checks its parent every period), so a killed run leaves none behind.
"""

from __future__ import annotations

import os
import subprocess
import sys

PERIOD = 0.1
"""Seconds of one busy-then-idle cycle."""

_HOG = """
import os, sys, time
duty, period, parent = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
while os.getppid() == parent:
    started = time.monotonic()
    while time.monotonic() - started < duty * period:
        pass
    time.sleep(period * (1 - duty))
"""


class Hogs:
    """``count`` busy processes (one per core by default) at ``duty`` of the CPU each."""

    def __init__(self, duty: float, count: int | None = None) -> None:
        if not 0 < duty <= 1:
            raise ValueError(f"a duty cycle is in (0, 1], not {duty}")
        self.duty = duty
        self.count = count or os.cpu_count() or 1
        self._processes: list[subprocess.Popen[bytes]] = []

    def start(self) -> None:
        """Start the hogs."""
        for _ in range(self.count):
            self._processes.append(
                subprocess.Popen(
                    [sys.executable, "-c", _HOG, str(self.duty), str(PERIOD), str(os.getpid())],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )

    def stop(self) -> None:
        """Kill the hogs and wait for them."""
        for process in self._processes:
            if process.poll() is None:
                process.kill()
        for process in self._processes:
            process.wait()
        self._processes.clear()

"""Sampling profiles of the service processes with py-spy, summarised as the top frames.

``py-spy record --format raw`` writes collapsed stacks (``frame;frame;… count``); the
summary gives, per process, the frames where samples were taken (self) and the frames
most often on the stack (inclusive), as shares of all samples.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
from collections import Counter
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Profiler:
    """py-spy attached to one process until :meth:`stop`."""

    name: str
    process: subprocess.Popen[bytes]
    output: Path

    @classmethod
    def attach(cls, name: str, pid: int, folder: Path, *, rate: int = 100) -> Profiler | None:
        """Start ``py-spy record`` on ``pid``; None when py-spy is not installed."""
        binary = shutil.which("py-spy")
        if binary is None:
            return None
        output = folder / f"{name}.collapsed"
        process = subprocess.Popen(
            [
                binary,
                "record",
                "--pid",
                str(pid),
                "--rate",
                str(rate),
                "--format",
                "raw",
                "--output",
                str(output),
                "--nonblocking",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        return cls(name, process, output)

    def stop(self) -> None:
        """Stop sampling; py-spy writes its output on SIGINT."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _frame(raw: str) -> str:
    # "function (path/to/module.py:123)" → "function (module.py)"
    name, _, where = raw.partition(" (")
    path = where.rstrip(")").rsplit(":", 1)[0]
    parts = path.split("/")
    short = "/".join(parts[-2:]) if len(parts) > 1 else path
    return f"{name} ({short})"


def summarise(path: Path, *, top: int = 12) -> dict[str, object]:
    """Self and inclusive shares of the top frames of one collapsed-stack file."""
    if not path.exists():
        return {"samples": 0, "self": [], "inclusive": []}
    own: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = 0
    for line in path.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = [_frame(frame) for frame in stack.split(";") if frame]
        if not frames:
            continue
        total += count
        own[frames[-1]] += count
        for frame in set(frames):
            inclusive[frame] += count

    def shares(counter: Counter[str]) -> list[list[object]]:
        return [[frame, round(100 * n / total, 1)] for frame, n in counter.most_common(top)]

    return {"samples": total, "self": shares(own), "inclusive": shares(inclusive)}

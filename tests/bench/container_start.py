"""Time a container's start beside a host process's: ``podman run`` against a plain exec.

Run: ``python -m tests.bench.container_start [--runs 20]`` (not collected by pytest; as
root, with podman, runc and busybox installed). Builds the busybox image offline, then in
pairs (one host process, one container, alternating) times from the start of the command
to its first line of output; prints p50/p99 of each and their ratio. This is the runtime's
share of a pod's start, not yet bind to start through the agent.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from vcbus.services.agent.app.podman import BASE, run_argv

IMAGE = "localhost/vcbus-bench-busybox:1"


def _first_line(argv: list[str]) -> float:
    begun = time.perf_counter()
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL) as child:
        assert child.stdout is not None
        child.stdout.readline()
        took = time.perf_counter() - begun
        child.wait()
    return took


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    runs = parser.parse_args().runs
    busybox = shutil.which("busybox")
    assert busybox is not None, "busybox is not installed"
    with tempfile.TemporaryDirectory() as context:
        shutil.copy(busybox, Path(context) / "busybox")
        (Path(context) / "Containerfile").write_text("FROM scratch\nCOPY busybox /bin/busybox\n")
        subprocess.run([*BASE, "build", "-q", "-t", IMAGE, context], check=True)
    process: list[float] = []
    container: list[float] = []
    for run in range(runs):
        process.append(_first_line([busybox, "echo", "up"]))
        argv = run_argv(
            uid=f"bench-{run}",
            node="bench",
            hostname=f"bench-{run}",
            container="main",
            image=IMAGE,
            command=["/bin/busybox", "echo", "up"],
            args=[],
            env={},
            working_dir="",
            files_dir="",
            user=None,
            group=None,
            memory_bytes=0,
            cpu_millis=0,
        )
        argv.insert(argv.index("run") + 1, "--rm")
        container.append(_first_line(argv))
    for name, values in (("process", process), ("container", container)):
        print(
            f"{name}: p50 {_pct(values, 0.5) * 1000:.1f} ms, p99 {_pct(values, 0.99) * 1000:.1f} ms"
            f" (mean {statistics.mean(values) * 1000:.1f} ms, {runs} runs)"
        )
    print(f"container/process p50 ratio: {_pct(container, 0.5) / _pct(process, 0.5):.0f}x")


if __name__ == "__main__":
    main()

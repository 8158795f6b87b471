"""``vcbus broker`` stopped as a process manager stops it: SIGTERM, and nothing is left."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

SIGTERM_BIT = 1 << (signal.SIGTERM - 1)


def children_of(pid: int) -> list[int]:
    found = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(
                line.split(":\t", 1) for line in status.read_text().splitlines() if ":\t" in line
            )
        except OSError:
            continue
        if fields.get("PPid", "").strip() == str(pid):
            found.append(int(status.parent.name))
    return found


def blocked_signals(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigBlk:"):
            return int(line.split()[1], 16)
    raise AssertionError(f"no SigBlk for {pid}")


def test_sigterm_stops_the_command_and_its_broker_which_does_not_block_sigterm() -> None:
    with subprocess.Popen(
        [sys.executable, "-m", "vcbus.services.cli", "broker", "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
    ) as command:
        try:
            assert command.stdout is not None
            line = command.stdout.readline()
            assert line.startswith("KAFKA_BOOTSTRAP_SERVERS=127.0.0.1:"), line
            (broker,) = children_of(command.pid)
            assert not blocked_signals(broker) & SIGTERM_BIT

            command.send_signal(signal.SIGTERM)

            assert command.wait(timeout=30) == 0
            assert not Path(f"/proc/{broker}").exists()
        finally:
            if command.poll() is None:
                command.kill()

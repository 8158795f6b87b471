"""Processes the test suite started that outlived it: found by a mark in their environment.

At the start of a run the suite puts ``PYTEST_VCBUS_RUN=<unique value>`` into its own
environment; every process it starts (brokers, gates, services, ``vcbus up`` and what that
starts) inherits it, also in a session of its own (``start_new_session``), also after its
parent died. ``/proc/<pid>/environ`` holds the environment a process was started with, so
the test runner itself does not carry the mark there, and runs of other users or other
checkouts carry other values. At the end of the run :func:`leftovers` lists the processes
still carrying this run's mark; the suite reports and ends them (``tests/conftest.py``).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MARK = "PYTEST_VCBUS_RUN"
"""The environment variable that marks a process as started by this test run.

Not under ``KAFKA_``, ``VCBUS_`` or ``OTEL_``: :func:`tests.support.processes.service_env`
keeps the rest of the runner's environment, so service processes carry it too."""

OWNER = "PYTEST_VCBUS_OWNER"
"""The environment variable that marks a process (and what it starts) as one fixture's."""

GRACE = 2.0
"""How long a fixture's processes still exiting get before they are SIGKILLed."""


@dataclass(frozen=True)
class Leftover:
    """A process of this run that still runs."""

    pid: int
    command: str


def mark_run() -> str:
    """Put this run's mark into the environment (once); the mark's value."""
    value = os.environ.get(MARK) or f"{os.getpid()}-{secrets.token_hex(6)}"
    os.environ[MARK] = value
    return value


def _marked(environ: bytes, entry: bytes) -> bool:
    return entry in environ.split(b"\0")


def leftovers(value: str | None = None, name: str = MARK) -> list[Leftover]:
    """The processes (other than this one) started with ``name=value``, still running.

    ``value``: this run's mark when none. Zombies (exited, not yet reaped) are left out:
    they run nothing.
    """
    value = value or os.environ.get(name)
    if not value:
        return []
    entry = f"{name}={value}".encode()
    found = []
    for path in Path("/proc").glob("[0-9]*"):
        pid = int(path.name)
        if pid == os.getpid():
            continue
        try:
            if not _marked((path / "environ").read_bytes(), entry):
                continue
            state = (path / "stat").read_text().rsplit(")", 1)[1].split()[0]
            command = (path / "cmdline").read_bytes().replace(b"\0", b" ").strip()
        except (OSError, IndexError):
            continue  # gone meanwhile, or not ours to read
        if state != "Z":
            found.append(Leftover(pid, command.decode(errors="replace")))
    return sorted(found, key=lambda leftover: leftover.pid)


def end(found: list[Leftover]) -> None:
    """SIGKILL each leftover (one that is gone meanwhile is skipped)."""
    for leftover in found:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(leftover.pid, signal.SIGKILL)


def owner_mark() -> str:
    """A new owner mark's value, unique to the caller."""
    return secrets.token_hex(16)


def end_owned(owner: str, grace: float | None = None) -> list[Leftover]:
    """End the processes carrying ``owner``'s mark: ``grace`` (:data:`GRACE`) to exit, then
    SIGKILL.

    Returns the ones that had to be killed.
    """
    deadline = time.monotonic() + (GRACE if grace is None else grace)
    found = leftovers(owner, OWNER)
    while found and time.monotonic() < deadline:
        time.sleep(0.05)
        found = leftovers(owner, OWNER)
    end(found)
    return found


@contextlib.contextmanager
def owned(env: Mapping[str, str]) -> Iterator[dict[str, str]]:
    """``env`` with an owner mark for the block; at its end (also on failure) every process
    still carrying the mark is ended (:func:`end_owned`)."""
    owner = owner_mark()
    try:
        yield {**env, OWNER: owner}
    finally:
        end_owned(owner)


def run_owned(
    command: list[str], *, env: Mapping[str, str], check: bool = False, **options: Any
) -> subprocess.CompletedProcess[str]:
    """``subprocess.run`` (text output) under an owner mark: what the command started and
    left running (after its ``timeout`` SIGKILLed it) is ended too."""
    with owned(env) as marked:
        done: subprocess.CompletedProcess[str] = subprocess.run(
            command, env=marked, check=check, **options
        )
    return done

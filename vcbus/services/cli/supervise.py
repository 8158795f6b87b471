"""``vcbus up``'s supervision of what it runs: each service and its agent, restarted with back-off.

As systemd's ``Restart=always`` (``RestartSec`` growing) or a Deployment's container under
the kubelet's CrashLoopBackOff: a process that exits — any status, since ``up`` is the only
one that stops them — is started again after a back-off (:class:`Backoff`: 1 s doubling to
30 s; a run that lasted a minute counts as healthy, and the next crash waits 1 s again).
Each exit and restart is said on ``up``'s standard error, and :meth:`Supervisor.health`
gives what the live view shows. The policy (:func:`exited`, :func:`restarted`) is pure;
:class:`Supervisor` does the processes.

A service's state is in its topics and changelogs, restored when it starts again; the
agent finds its pods by their directories (their supervisors outlive it).
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

STOP_WAIT_SECONDS = 15.0
"""How long a process stopped with SIGTERM may take to exit before it is SIGKILLed."""


@dataclass(frozen=True, slots=True)
class Backoff:
    """How long a process waits before it is started again."""

    first: float = 1.0
    most: float = 30.0
    steady: float = 60.0
    """A run this long resets the count of crashes in a row."""

    def delay(self, crashes: int) -> float:
        """The wait after the ``crashes``-th crash in a row (1 for the first)."""
        return min(self.first * float(2 ** min(max(crashes - 1, 0), 30)), self.most)


@dataclass(frozen=True, slots=True)
class Health:
    """What ``up`` knows of one process it supervises."""

    restarts: int = 0
    crashes: int = 0
    """Exits in a row, each after a run shorter than :attr:`Backoff.steady`."""
    restart_at: float | None = None
    """When it is started again (monotonic seconds); None while it runs."""
    last_exit: str = ""
    """How it last ended: ``status 1``, ``signal 9 (SIGKILL)``; empty if it never did."""

    @property
    def running(self) -> bool:
        """Whether it runs (it is not waiting for its restart)."""
        return self.restart_at is None

    def text(self) -> str:
        """``running``, ``running, 2 restarts (last: signal 9 (SIGKILL))``, ``restarting``."""
        state = "running" if self.running else "restarting"
        if not self.restarts and not self.last_exit:
            return state
        count = f"{self.restarts} restart{'s' if self.restarts != 1 else ''}"
        return f"{state}, {count} (last: {self.last_exit})"


def exit_text(returncode: int) -> str:
    """A process's end as people read it: ``status 3``, ``signal 9 (SIGKILL)``."""
    if returncode >= 0:
        return f"status {returncode}"
    try:
        name = signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"
    return f"signal {-returncode} ({name})"


def exited(health: Health, backoff: Backoff, *, ran_for: float, now: float, how: str) -> Health:
    """The health of a process that ended ``how`` after ``ran_for`` seconds: its restart time."""
    crashes = 1 if ran_for >= backoff.steady else health.crashes + 1
    return replace(health, crashes=crashes, restart_at=now + backoff.delay(crashes), last_exit=how)


def restarted(health: Health) -> Health:
    """The health of a process started again."""
    return replace(health, restarts=health.restarts + 1, restart_at=None)


@dataclass
class Child:
    """One supervised process: how to start it, the process now, its health."""

    name: str
    argv: list[str]
    env: dict[str, str]
    log: Path
    process: subprocess.Popen[bytes] | None = None
    started: float = 0.0
    health: Health = field(default_factory=Health)


class Supervisor:
    """Starts ``up``'s processes, restarts those that exit, stops them all at the end."""

    def __init__(
        self,
        clock: Callable[[], float],
        backoff: Backoff | None = None,
        say: Callable[[str], None] | None = None,
    ) -> None:
        self._clock = clock
        self._backoff = backoff or Backoff()
        self._say = say or _to_stderr
        self.children: dict[str, Child] = {}

    def start(self, name: str, argv: list[str], env: dict[str, str], log: Path) -> None:
        """Start a process to supervise (its log truncated: this ``up``'s alone)."""
        child = self.children[name] = Child(name, argv, env, log)
        child.process = self._run(child, mode="wb")

    def _run(self, child: Child, *, mode: str) -> subprocess.Popen[bytes]:
        child.started = self._clock()
        with child.log.open(mode) as log:
            return subprocess.Popen(child.argv, env=child.env, stdout=log, stderr=subprocess.STDOUT)

    def check(self) -> None:
        """Note each process that exited; start again each whose back-off is over."""
        now = self._clock()
        for child in self.children.values():
            process = child.process
            if process is not None and process.poll() is not None:
                how = exit_text(process.returncode)
                child.process = None
                child.health = exited(
                    child.health, self._backoff, ran_for=now - child.started, now=now, how=how
                )
                wait = (child.health.restart_at or now) - now
                self._say(
                    f"{child.name} exited ({how}); restarting it in {wait:g}s (see {child.log})\n"
                )
            restart_at = child.health.restart_at
            if child.process is None and restart_at is not None and now >= restart_at:
                process = child.process = self._run(child, mode="ab")
                child.health = restarted(child.health)
                self._say(
                    f"{child.name} restarted (pid {process.pid}, restart {child.health.restarts})\n"
                )

    def health(self) -> dict[str, Health]:
        """Each process's health, by name."""
        return {name: child.health for name, child in self.children.items()}

    def stop(self, names: list[str] | None = None, wait: float = STOP_WAIT_SECONDS) -> None:
        """Stop ``names`` (every process when None): SIGTERM, ``wait`` seconds, SIGKILL.

        None of them is started again.
        """
        chosen = [child for name, child in self.children.items() if names is None or name in names]
        for child in chosen:
            child.health = replace(child.health, restart_at=None)
            if child.process is not None:
                with contextlib.suppress(ProcessLookupError):
                    child.process.send_signal(signal.SIGTERM)
        for child in chosen:
            process, child.process = child.process, None
            if process is None:
                continue
            try:
                process.wait(timeout=wait)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _to_stderr(text: str) -> None:
    sys.stderr.write(text)
    sys.stderr.flush()

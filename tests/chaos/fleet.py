"""The chaos run's processes: service replicas as ``python -m vcbus.services.cli serve`` and node
agents as ``python -m vcbus.services.cli agent``, logs in files.

Every incarnation of a replica writes stdout and stderr to its own file
(``<service>-<instance>.<n>.log``), so the driver spends no CPU reading lines while the run
goes on (services log each record at info) and the files stay for a post-mortem. Lines the
figures need (``lease_acquired``, ``partitions_assigned`` ...) are picked out of the files
with a substring test before any JSON is parsed.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from tests.chaos.checks import ProcessEnd
from tests.support.processes import ROOT, STOP_LIMIT

Line = dict[str, Any]
AGENT = "agent"
"""The service name of a node agent's replicas (``vcbus agent``)."""


@dataclass
class Incarnation:
    """One process of a replica, from start to exit."""

    replica: Replica
    number: int
    log: Path
    popen: subprocess.Popen[bytes]
    killed_at: datetime | None = None
    """When the run SIGKILLed it while it ran (a planned kill); None otherwise."""
    stopped: bool = False
    """Whether the run sent it SIGTERM at the end (a planned stop)."""

    @property
    def label(self) -> str:
        """``<service>-<instance>.<n>``."""
        return f"{self.replica.label}.{self.number}"

    @property
    def alive(self) -> bool:
        """Whether the process still runs."""
        return self.popen.poll() is None

    def end(self) -> ProcessEnd:
        """How it ended: its exit status (None: still running), what the run did, and the
        end of its log when that was not the plan."""
        planned = "kill" if self.killed_at is not None else "stop" if self.stopped else ""
        end = ProcessEnd(self.label, self.popen.poll(), planned)
        return end if end.as_planned else replace(end, tail=self.tail(5))

    def lines(self, *events: str) -> list[Line]:
        """The JSON lines of the log whose ``event`` is one of ``events`` (all when none)."""
        out: list[Line] = []
        if not self.log.exists():
            return out
        with self.log.open("r", encoding="utf-8", errors="replace") as stream:
            for text in stream:
                if not text.startswith("{"):
                    continue
                if events and not any(f'"{name}"' in text for name in events):
                    continue
                try:
                    line = json.loads(text)
                except ValueError:
                    continue
                if isinstance(line, dict) and (not events or line.get("event") in events):
                    out.append(line)
        return out

    def tail(self, count: int = 20) -> str:
        """The last lines of the log, for failure messages."""
        if not self.log.exists():
            return ""
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-count:])


@dataclass
class Replica:
    """One replica slot of a service (``admission`` instance ``a``) and its incarnations.

    A node agent is a replica of service ``agent`` whose instance is its node's name.
    """

    service: str
    instance: str
    args: tuple[str, ...]
    env: Mapping[str, str]
    log_dir: Path
    incarnations: list[Incarnation] = field(default_factory=list)

    @property
    def argv(self) -> tuple[str, ...]:
        """The CLI's arguments: ``agent ARGS`` or ``serve SERVICE --instance I ARGS``."""
        if self.service == AGENT:
            return (AGENT, *self.args)
        return ("serve", self.service, "--instance", self.instance, *self.args)

    @property
    def label(self) -> str:
        """``<service>-<instance>``."""
        return f"{self.service}-{self.instance}"

    @property
    def current(self) -> Incarnation:
        """The latest incarnation."""
        return self.incarnations[-1]

    def start(self) -> Incarnation:
        """Start a new incarnation (the previous one must have exited)."""
        number = len(self.incarnations)
        log = self.log_dir / f"{self.label}.{number}.log"
        with log.open("wb") as out:
            popen = subprocess.Popen(
                [sys.executable, "-m", "vcbus.services.cli", *self.argv],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=dict(self.env),
                cwd=ROOT,
                start_new_session=True,
            )
        incarnation = Incarnation(self, number, log, popen)
        self.incarnations.append(incarnation)
        return incarnation

    def kill(self, at: datetime) -> Incarnation:
        """SIGKILL the current incarnation and reap it; it is returned.

        Only a process that still runs is killed as planned: one that had already exited
        keeps its own exit, which :func:`~tests.chaos.checks.check_exits` reports.
        """
        incarnation = self.current
        if incarnation.alive:
            incarnation.killed_at = at
            incarnation.popen.send_signal(signal.SIGKILL)
        incarnation.popen.wait()
        return incarnation


class Fleet:
    """Every replica of the run; stops what it started when closed."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self.replicas: list[Replica] = []

    def add(
        self, service: str, instance: str, env: Mapping[str, str], args: Sequence[str] = ()
    ) -> Replica:
        """Declare a replica (not started yet)."""
        replica = Replica(service, instance, tuple(args), env, self.log_dir)
        self.replicas.append(replica)
        return replica

    def of(self, service: str) -> list[Replica]:
        """The replicas of ``service``."""
        return [replica for replica in self.replicas if replica.service == service]

    def incarnations(self, service: str | None = None) -> Iterator[Incarnation]:
        """Every incarnation (of ``service``), in start order per replica."""
        for replica in self.replicas:
            if service is None or replica.service == service:
                yield from replica.incarnations

    def ends(self) -> list[ProcessEnd]:
        """How every incarnation of the run ended (or that it still runs)."""
        return [incarnation.end() for incarnation in self.incarnations()]

    def stop(self) -> dict[str, int]:
        """SIGTERM every live process once, wait for each; exit statuses by label.

        A process that does not exit within the limit is SIGKILLed (status -9).
        """
        live = [r.current for r in self.replicas if r.incarnations and r.current.alive]
        for incarnation in live:
            incarnation.stopped = True
            incarnation.popen.send_signal(signal.SIGTERM)
        statuses: dict[str, int] = {}
        for incarnation in live:
            try:
                statuses[incarnation.label] = incarnation.popen.wait(STOP_LIMIT)
            except subprocess.TimeoutExpired:
                incarnation.popen.send_signal(signal.SIGKILL)
                statuses[incarnation.label] = incarnation.popen.wait()
        return statuses

    def close(self) -> None:
        """Kill whatever still runs (after a failure)."""
        for replica in self.replicas:
            for incarnation in replica.incarnations:
                if incarnation.alive:
                    incarnation.popen.send_signal(signal.SIGKILL)
                    incarnation.popen.wait()

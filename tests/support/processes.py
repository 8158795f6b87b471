"""Services as processes for tests: start ``python -m ...``, follow its JSON log lines, kill it.

Each process gets an environment built from the test's (``KAFKA_*``, ``VCBUS_*`` and
``OTEL_*`` of the test runner are left out, so only what the test gives counts). Its stdout
and stderr are read line by line in background threads; a JSON object line is kept as a
dict, any other line as ``{"event": None, "text": line}``. Every kept line also gets
``_stream`` (``stdout``/``stderr``) and ``_seq``, a number increasing in arrival order over
all processes of the run. Waits are bounded (generous limits, support code, never timing
assertions) and fail with the process's last lines. ``Processes`` stops what it started:
SIGTERM, then SIGKILL when it does not exit, then the pipes are closed and the readers joined;
what the process started and left running (it carries the process's owner mark,
:mod:`tests.support.leftovers`) is ended too.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Self

from tests.support import leftovers

ROOT = Path(__file__).resolve().parents[2]

LIMIT = 60.0
"""How long a wait lasts at most (generous: a 2-core CI machine under load)."""

STOP_LIMIT = 20.0
"""How long a process gets to exit after SIGTERM before it is SIGKILLed."""

Line = dict[str, Any]
Predicate = Callable[[Line], bool]

_INHERITED_NOT = ("KAFKA_", "VCBUS_", "OTEL_")
_sequence = itertools.count()
_sequence_lock = threading.Lock()


def _next_seq() -> int:
    with _sequence_lock:
        return next(_sequence)


def event(name: str, **fields: object) -> Predicate:
    """Match log lines whose ``event`` is ``name`` and whose ``fields`` have these values."""

    def match(line: Line) -> bool:
        return line.get("event") == name and all(line.get(k) == v for k, v in fields.items())

    return match


def service_env(bootstrap: str, prefix: str, **extra: str) -> dict[str, str]:
    """The environment of a service process: the broker, the topic prefix and ``extra``.

    The runner's own ``KAFKA_*``, ``VCBUS_*`` and ``OTEL_*`` variables are not passed on.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith(_INHERITED_NOT)}
    env.update(
        PYTHONUNBUFFERED="1",
        VCBUS_HEALTH_PORT="0",
        KAFKA_BOOTSTRAP_SERVERS=bootstrap,
        VCBUS_TOPIC_PREFIX=prefix,
    )
    env.update(extra)
    return env


class ProcessWaitError(AssertionError):
    """A process did not log what was waited for (it exited, or the limit passed)."""


class ServiceProcess:
    """One ``python -m module args...`` process and the lines it wrote."""

    def __init__(
        self,
        name: str,
        module: str,
        args: Sequence[str],
        env: Mapping[str, str],
        wrap: Sequence[str] = (),
    ) -> None:
        """``wrap``: a command that runs it (``ip netns exec NAME``: on another host)."""
        self.name = name
        self.command = [*wrap, sys.executable, "-m", module, *args]
        self._owner = leftovers.owner_mark()
        self._env = {**env, leftovers.OWNER: self._owner}
        self._lines: list[Line] = []
        self._changed = threading.Condition()
        self._open_streams = 0
        self._popen: subprocess.Popen[str] | None = None
        self._readers: list[threading.Thread] = []

    def start(self) -> Self:
        """Start the process and its two reader threads."""
        self._popen = subprocess.Popen(
            self.command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=self._env,
            cwd=ROOT,
            text=True,
            encoding="utf-8",
            errors="replace",
            start_new_session=True,
        )
        streams: list[tuple[str, IO[str] | None]] = [
            ("stdout", self._popen.stdout),
            ("stderr", self._popen.stderr),
        ]
        for label, stream in streams:
            assert stream is not None
            self._open_streams += 1
            reader = threading.Thread(
                target=self._read, args=(label, stream), name=f"{self.name}-{label}", daemon=True
            )
            reader.start()
            self._readers.append(reader)
        return self

    @property
    def pid(self) -> int:
        """The process id."""
        return self._process().pid

    def _process(self) -> subprocess.Popen[str]:
        if self._popen is None:
            raise RuntimeError(f"{self.name} was not started")
        return self._popen

    def _read(self, label: str, stream: IO[str]) -> None:
        try:
            for text in stream:
                line = _parse(text.rstrip("\n"))
                with self._changed:
                    line["_stream"] = label
                    line["_seq"] = _next_seq()
                    self._lines.append(line)
                    self._changed.notify_all()
        finally:
            with self._changed:
                self._open_streams -= 1
                self._changed.notify_all()

    @property
    def lines(self) -> list[Line]:
        """Every line read so far, in arrival order."""
        with self._changed:
            return list(self._lines)

    def matching(self, predicate: Predicate) -> list[Line]:
        """The lines read so far that match ``predicate``."""
        return [line for line in self.lines if predicate(line)]

    @property
    def returncode(self) -> int | None:
        """The exit status, or None while the process runs."""
        return self._process().poll()

    def wait_for(self, predicate: Predicate, *, count: int = 1, timeout: float = LIMIT) -> Line:
        """Wait until ``count`` lines match ``predicate``; return the ``count``-th.

        Raises:
            ProcessWaitError: the process exited (and its output ended) or the limit passed
                first; the message holds its last lines.
        """

        def found() -> list[Line]:
            return [line for line in self._lines if predicate(line)]

        with self._changed:
            self._changed.wait_for(
                lambda: len(found()) >= count or self._open_streams == 0, timeout
            )
            matches = found()
        if len(matches) >= count:
            return matches[count - 1]
        why = "exited" if self._open_streams == 0 else f"did not log it within {timeout:.0f}s"
        raise ProcessWaitError(
            f"{self.name} {why} (status {self._process().poll()}); "
            f"{len(matches)}/{count} matching lines; last lines:\n{self.tail()}"
        )

    async def wait_for_async(
        self, predicate: Predicate, *, count: int = 1, timeout: float = LIMIT
    ) -> Line:
        """``wait_for`` in a worker thread, so the event loop keeps running meanwhile."""
        return await asyncio.to_thread(self.wait_for, predicate, count=count, timeout=timeout)

    def tail(self, lines: int = 40) -> str:
        """The last lines read, as text (for failure messages)."""
        return "\n".join(
            line.get("text") or json.dumps({k: v for k, v in line.items() if k[0] != "_"})
            for line in self.lines[-lines:]
        )

    def exited(self, timeout: float = LIMIT) -> int:
        """Wait for the process to exit on its own; its status (``-9`` after a SIGKILL).

        Raises:
            ProcessWaitError: it still runs after ``timeout``.
        """
        try:
            return self._process().wait(timeout)
        except subprocess.TimeoutExpired:
            raise ProcessWaitError(
                f"{self.name} still runs after {timeout:.0f}s; last lines:\n{self.tail()}"
            ) from None

    def signal_stop(self) -> None:
        """Send SIGTERM if the process runs, without waiting."""
        if self._popen is not None and self._popen.poll() is None:
            self._popen.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        """SIGKILL the process and reap it."""
        process = self._process()
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
        process.wait()

    def terminate(self, timeout: float = STOP_LIMIT) -> int:
        """SIGTERM the process and wait for it to exit (SIGKILL after ``timeout``)."""
        process = self._process()
        if process.poll() is None:
            self.signal_stop()
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.send_signal(signal.SIGKILL)
                process.wait()
        return process.returncode

    def close(self) -> None:
        """Stop the process if it runs, read its remaining output, close its pipes; end what
        it started that still runs."""
        if self._popen is None:
            return
        self.terminate()
        leftovers.end_owned(self._owner)
        for reader in self._readers:
            reader.join(STOP_LIMIT)
        for stream in (self._popen.stdout, self._popen.stderr):
            if stream is not None:
                stream.close()


def _parse(text: str) -> Line:
    if text.startswith("{"):
        try:
            parsed = json.loads(text)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            return parsed
    return {"event": None, "text": text}


class Processes:
    """The processes a test started; all are stopped and closed when the block ends."""

    def __init__(self) -> None:
        self._started: list[ServiceProcess] = []

    def start(
        self, name: str, module: str, *args: str, env: Mapping[str, str], wrap: Sequence[str] = ()
    ) -> ServiceProcess:
        """Start ``python -m module args...`` as ``name`` with exactly ``env`` (under ``wrap``)."""
        process = ServiceProcess(name, module, args, env, wrap)
        self._started.append(process)
        return process.start()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Stop and close every process started (in parallel: SIGTERM first to all)."""
        for process in self._started:
            process.signal_stop()
        for process in self._started:
            process.close()
        self._started.clear()

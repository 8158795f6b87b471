"""The supervisors' launcher: a process that has imported the supervisor, and forks one per pod.

A Python process takes a few hundred milliseconds to start and import what a supervisor
needs (most of a pod's start, and about 100 ms of CPU). The agent therefore starts this
launcher once (``python -m vcbus.services.agent.app.launcher SOCKET``); it imports the
supervisor, listens on a Unix socket of the agent's data directory (mode 0600), and for
each pod directory it is sent:

1. forks a child, which starts a session of its own (``setsid``: the pod is detached from
   the agent and the launcher), takes the pod's lock (``supervisor.lock``, ``flock``),
   forks the supervisor, writes its pid to ``supervisor.pid`` and exits;
2. reaps that child and answers ``ok <pid>``.

The supervisor inherits the locked file: the lock is held exactly as long as the
supervisor lives, whoever its parent is by then (the host's init, once the child exited),
so the agent tells a live supervisor from a dead one by trying the lock (no pid can be
mistaken for it). The launcher ends with the agent (``PR_SET_PDEATHSIG``); the
supervisors do not. It is single-threaded, so forking it is safe.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import signal
import socket
import sys
from pathlib import Path

from vcbus.services.agent.app import podfs, supervisor

LOCK_FILE = "supervisor.lock"
PID_FILE = "supervisor.pid"
SUPERVISOR_LOG = "supervisor.log"
"""The supervisor's own errors (a crash of the supervisor itself, not the pod's output)."""
PR_SET_PDEATHSIG = 1
PR_SET_NAME = 15
SUPERVISOR_NAME = b"vcbus-supervise"
"""A supervisor's process name (its command line stays the launcher's)."""


def launch(pod_dir: Path) -> int:
    """Start the supervisor of ``pod_dir`` in a session of its own; its pid."""
    reader, writer = os.pipe()
    child = os.fork()
    if child == 0:  # the session leader, gone once the supervisor is forked
        os.close(reader)
        try:
            os.setsid()
            lock = os.open(pod_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
            fcntl.flock(lock, fcntl.LOCK_EX)
            pid = os.fork()
            if pid == 0:
                _supervise(pod_dir, keep=lock)
            podfs.write_whole(pod_dir / PID_FILE, str(pid).encode())
            os.write(writer, str(pid).encode())
        finally:
            os._exit(0)
    os.close(writer)
    with os.fdopen(reader, "rb") as answer:
        text = answer.read()
    os.waitpid(child, 0)
    if not text:
        raise OSError(f"the supervisor of {pod_dir} could not be started")
    return int(text)


def _supervise(pod_dir: Path, *, keep: int) -> None:
    """The supervisor's process: its standard streams, then the pod; never returns.

    Of the launcher's open files it keeps only the pod's lock (``keep``).
    """
    code = 1
    try:
        null = os.open(os.devnull, os.O_RDWR)
        errors = os.open(
            pod_dir / SUPERVISOR_LOG, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600
        )
        os.dup2(null, 0)
        os.dup2(null, 1)
        os.dup2(errors, 2)
        for fd in (null, errors):
            if fd > 2:
                os.close(fd)
        os.closerange(3, keep)
        os.closerange(keep + 1, os.sysconf("SC_OPEN_MAX"))
        os.chdir(pod_dir)
        with contextlib.suppress(OSError):  # ps -o comm, top: a pod's supervisor, not a launcher
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_NAME, SUPERVISOR_NAME, 0, 0, 0)
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, signal.SIG_DFL)
        code = supervisor.main([str(pod_dir)])
    except BaseException:  # noqa: BLE001 - written to the supervisor's log, then exit
        import traceback  # noqa: PLC0415 - only on a crash

        traceback.print_exc()
    finally:
        os._exit(code)


def serve(path: Path) -> None:
    """Answer launch requests on the Unix socket ``path`` until the agent ends."""
    with contextlib.suppress(OSError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        server.bind(str(path))
    finally:
        os.umask(old)
    server.listen(64)
    print("ready", flush=True)
    while True:
        connection, _ = server.accept()
        with connection, connection.makefile("rwb") as stream:
            reply = _answer(stream.readline())
            with contextlib.suppress(OSError):  # the agent may be gone: the next one asks
                stream.write(reply.encode())
                stream.flush()


def _answer(request: bytes) -> str:
    """Launch the supervisor a request names; the reply, ``ok <pid>`` or ``error <why>``.

    A request is one absolute pod directory and a newline. Anything else (an agent killed
    while it sent, a relative path) is refused: a supervisor started there would run in
    the launcher's own working directory.
    """
    text = request.decode(errors="replace").strip()
    if not request.endswith(b"\n") or not os.path.isabs(text):
        return f"error a launch request is one absolute pod directory and a newline, got {text!r}\n"
    try:
        return f"ok {launch(Path(text))}\n"
    except OSError as exc:
        return f"error {exc}\n"


if __name__ == "__main__":
    serve(Path(sys.argv[1]))

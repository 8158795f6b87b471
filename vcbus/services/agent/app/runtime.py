"""The agent's runtime: pods as supervised host processes in its data directory.

I/O, behind one small interface (:class:`PodRuntime`: start, report, stop, forget, logs)
so that a container runtime (podman, containerd) can take its place without touching the
agent's core or shell. :class:`HostProcesses` is the one implementation: each pod gets a
directory ``<data>/pods/<uid>/`` (the uid checked: one path component), the agent's, mode
0710 with the pod's group (only the pod and the agent enter it; 0700 when the agent is not
root and pods run as its own user), holding

- ``plan.json`` (what to run, its environment included), ``status.json`` (written by the
  supervisor alone), ``supervisor.pid``, each mode 0600, and
  ``logs/<container>/<restart>.log`` (mode 0700: readable by the agent only);
- ``work/``: the pod's private working directory (``HOME``), mode 0700, owned by the pod's
  user;
- ``volcano/``: the plugins' files (``etc/volcano/…``, ``ssh/config``), mode 0700, owned by
  the pod's user.

Every operation as root in a pod's directory goes through
:mod:`vcbus.services.agent.app.podfs` (no link followed, nothing outside the pod's
directory); a pod's directory is removed as an entry of ``pods/``, never through a link.
A pod's processes end with it: :meth:`HostProcesses.kill` SIGKILLs what its cgroup (and its
containers' process groups) hold until none is left, when it is forgotten and when its
supervisor is found gone.

The supervisor (:mod:`vcbus.services.agent.app.supervisor`) is forked by the launcher
(:mod:`vcbus.services.agent.app.launcher`) in a session of its own, so it and the pod outlive the
agent; it holds the pod's lock (``supervisor.lock``) as long as it lives, so a restarted
agent finds each pod by its directory and tells whether its supervisor lives by trying
that lock (a reused pid is never taken for it).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

import msgspec

from vcbus.services.agent.app import podfs, podman, podvolumes
from vcbus.services.agent.app.cgroups import Cgroups
from vcbus.services.agent.app.launcher import LOCK_FILE, PID_FILE
from vcbus.services.agent.app.podlogs import LOGS_DIR
from vcbus.services.agent.app.supervisor import PLAN_FILE, STATUS_FILE, WORK_DIR
from vcbus.services.agent.model import PodPlan, PodReport
from vcbus.services.agent.validate import uid_error

PODS_DIR = "pods"
PREVIOUS_DIR = "previous"
"""Where the logs of each pod's last forgotten incarnation are kept: ``previous/<ns>_<name>/``."""
PREVIOUS_KEPT = 64
"""Pods whose last forgotten incarnation's logs are kept (the most recently forgotten)."""
FILES_DIR = "volcano"
LAUNCHER_SOCKET = "launcher.sock"
FORGET_WAIT = 5.0
"""How long a killed supervisor may take to let go of its pod's lock."""

_SOURCE_ROOT = str(Path(__file__).resolve().parents[__name__.count(".")])
"""The folder that holds the top-level package (one level per dot of this module's name), for
the launcher's ``python -m``."""
_encoder = msgspec.json.Encoder()
_report_decoder = msgspec.json.Decoder(PodReport)


class PodRuntime(Protocol):
    """What the agent asks of a runtime: run a pod, say how it is, stop it, clear it."""

    def pod_dir(self, uid: str) -> Path:
        """The pod's directory."""
        ...

    def files_dir(self, uid: str) -> Path:
        """Where the plugins' files of the pod go (their ``directory``)."""
        ...

    def work_dir(self, uid: str) -> Path:
        """The pod's private working directory."""
        ...

    def start(self, plan: PodPlan, files: Mapping[str, str]) -> None:
        """Prepare the pod's directory, write ``files`` under its files directory, run it."""
        ...

    def report(self, uid: str) -> PodReport | None:
        """The pod's report; None when its supervisor is gone without a final one."""
        ...

    def changed(self, uid: str) -> bool:
        """Whether the pod's report changed since this was last asked."""
        ...

    def stop(self, uid: str) -> None:
        """Ask the pod's supervisor to stop it (SIGTERM; the supervisor does the rest)."""
        ...

    def forget(self, uid: str, *, keep_logs_as: str = "") -> None:
        """Kill what is left of the pod and remove its directory and cgroup.

        With ``keep_logs_as`` (the pod's ``namespace/name``), its logs are kept for
        ``logs --previous`` (:meth:`previous_dir`).
        """
        ...

    def kill(self, uid: str) -> None:
        """Kill every process left of the pod (its supervisor gone) and remove its cgroup."""
        ...

    def log_file(self, uid: str, container: str, restart: int) -> Path:
        """The log of one run of one container."""
        ...

    def close(self) -> None:
        """Let go of what the runtime holds for the agent (the pods run on)."""
        ...

    def previous_dir(self, key: str) -> Path | None:
        """The kept directory (plan and logs) of pod ``key``'s last forgotten incarnation."""
        ...


class HostProcesses:
    """Pods as host processes, each under its own supervisor (see the module docstring)."""

    def __init__(self, data_dir: Path, cgroups: Cgroups | None, *, containers: str = "") -> None:
        self.data_dir = data_dir
        self.cgroups = cgroups
        self.containers = containers
        """The node whose podman containers this runtime's pods run in; empty: none."""
        self._seen: dict[str, int] = {}
        self._launcher: subprocess.Popen[bytes] | None = None
        (data_dir / PODS_DIR).mkdir(parents=True, exist_ok=True)
        data_dir.chmod(0o711)
        pods = data_dir / PODS_DIR
        if pods.is_symlink() or not pods.is_dir():
            raise OSError(f"{pods} is not a directory of the agent's")
        pods.chmod(0o711)

    def close(self) -> None:
        """Stop the launcher (the pods and their supervisors run on)."""
        launcher, self._launcher = self._launcher, None
        if launcher is not None:
            launcher.terminate()
            launcher.wait()
            if launcher.stdout is not None:
                launcher.stdout.close()

    def pod_dir(self, uid: str) -> Path:
        """The pod's directory; ValueError for a uid that is not one (no ``..``, no ``/``)."""
        problem = uid_error("pod uid", uid)
        if problem:
            raise ValueError(problem)
        return self.data_dir / PODS_DIR / uid

    def files_dir(self, uid: str) -> Path:
        """Where the plugins' files of the pod go."""
        return self.pod_dir(uid) / FILES_DIR

    def work_dir(self, uid: str) -> Path:
        """The pod's private working directory."""
        return self.pod_dir(uid) / WORK_DIR

    def start(self, plan: PodPlan, files: Mapping[str, str]) -> None:
        """Prepare the pod's directory, files and cgroup, then start its supervisor.

        A pod whose supervisor was started already (its lock file exists: an agent that
        stopped after starting it and before saving so) is not started again; its report,
        or its supervisor's absence, says how it is.
        """
        pod_dir = self.pod_dir(plan.uid)
        if (pod_dir / LOCK_FILE).exists():
            return
        pods = self.data_dir / PODS_DIR
        podvolumes.release(pod_dir)  # what a start that failed half-way left
        podfs.remove_child(pods, plan.uid)
        with podfs.opened_dir(pods) as pods_fd:
            os.mkdir(plan.uid, 0o700, dir_fd=pods_fd)
            with podfs.opened_dir(plan.uid, dir_fd=pods_fd) as pod_fd:
                if plan.group is not None and os.geteuid() == 0:
                    # the pod's group may enter (to its own directories), no other pod
                    os.chown(pod_fd, -1, plan.group)
                    os.chmod(pod_fd, 0o710)
                for private in (WORK_DIR, FILES_DIR):
                    os.mkdir(private, 0o700, dir_fd=pod_fd)
                with podfs.opened_dir(FILES_DIR, dir_fd=pod_fd) as files_fd:
                    for relative, content in files.items():
                        podfs.write_new(files_fd, relative, content.encode())
                if plan.user is not None or plan.group is not None:
                    for private in (WORK_DIR, FILES_DIR):
                        with podfs.opened_dir(private, dir_fd=pod_fd) as private_fd:
                            podfs.chown_tree(
                                private_fd,
                                -1 if plan.user is None else plan.user,
                                -1 if plan.group is None else plan.group,
                            )
                os.mkdir(LOGS_DIR, 0o700, dir_fd=pod_fd)
        if self.cgroups is not None and not plan.runtime:
            limits = plan.limits
            dirs = self.cgroups.create(plan.uid, limits.cpu_millis, limits.memory_bytes)
            limits = msgspec.structs.replace(limits, dirs=dirs, version=self.cgroups.version)
            plan = msgspec.structs.replace(plan, limits=limits)
        podfs.write_whole(pod_dir / PLAN_FILE, _encoder.encode(plan))
        self._launch(pod_dir)

    def changed(self, uid: str) -> bool:
        """Whether ``status.json`` changed since this was last asked."""
        try:
            stamp = (self.pod_dir(uid) / STATUS_FILE).stat().st_mtime_ns
        except FileNotFoundError:
            stamp = 0
        if self._seen.get(uid) == stamp:
            return False
        self._seen[uid] = stamp
        return True

    def report(self, uid: str) -> PodReport | None:
        """The supervisor's report; a supervisor that is gone without ending the pod: None.

        Whether the supervisor lives is asked before its report is read: a supervisor
        writes its final report, then exits, so a report read after a supervisor was seen
        gone is its last. (Read first, a report of a pod still running could be followed by
        the supervisor's exit: the pod seemed lost though it had ended, as a chaos run saw.)
        """
        alive = self.alive(uid)
        try:
            report = _report_decoder.decode((self.pod_dir(uid) / STATUS_FILE).read_bytes())
        except (FileNotFoundError, msgspec.DecodeError):
            report = PodReport()
        if report.is_final or alive:
            return report
        return None

    def alive(self, uid: str) -> bool:
        """Whether the pod's supervisor lives: it holds the pod's lock as long as it does."""
        try:
            lock = os.open(self.pod_dir(uid) / LOCK_FILE, os.O_RDONLY | os.O_NOFOLLOW)
        except FileNotFoundError:
            return False
        try:
            fcntl.flock(lock, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(lock)
        return False

    def stop(self, uid: str) -> None:
        """SIGTERM the pod's supervisor, which stops the pod's processes."""
        pid = self._pid(uid)
        if pid is not None and self.alive(uid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)

    def forget(self, uid: str, *, keep_logs_as: str = "") -> None:
        """Kill the supervisor and the pod's processes if any are left; remove its files.

        With ``keep_logs_as`` (the pod's ``namespace/name``), its logs are kept first.
        """
        pid = self._pid(uid)
        if pid is not None and self.alive(uid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + FORGET_WAIT
        while self.alive(uid) and time.monotonic() < deadline:
            time.sleep(0.01)
        self.kill(uid)
        if keep_logs_as:
            self._keep_previous(uid, keep_logs_as)
        podfs.remove_child(self.data_dir / PODS_DIR, uid)
        self._seen.pop(uid, None)

    def kill(self, uid: str) -> None:
        """SIGKILL what is left of the pod: its containers' groups, then its whole cgroup.

        Called once its supervisor is gone (a supervisor killed with -9 leaves its pod
        running): every process in the pod's cgroup, a ``setsid`` one included, is killed
        until none is left, and the cgroup removed.
        """
        report = None
        with contextlib.suppress(FileNotFoundError, msgspec.DecodeError):
            report = _report_decoder.decode((self.pod_dir(uid) / STATUS_FILE).read_bytes())
        for container in report.containers if report is not None else ():
            if container.pgid > 1:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(container.pgid, signal.SIGKILL)
        if self.cgroups is not None:
            self.cgroups.kill(uid)
        if self.containers:
            podman.remove_pod(self.containers, uid)
        podvolumes.release(self.pod_dir(uid))  # a tmpfs its supervisor had no time to unmount

    def sweep(self) -> list[str]:
        """Remove this node's containers whose pod has no directory (left by a crash).

        A pod with a directory is its supervisor's (adopted as it is), or, its supervisor
        gone, :meth:`kill`'s. Returns the uids of the pods removed.
        """
        if not self.containers:
            return []
        pods = self.data_dir / PODS_DIR
        left = sorted(uid for uid in podman.pod_uids(self.containers) if not (pods / uid).is_dir())
        for uid in left:
            podman.remove_pod(self.containers, uid)
        return left

    def _keep_previous(self, uid: str, key: str) -> None:
        """Keep the logs of a pod being forgotten, for ``logs --previous`` (bounded).

        One incarnation per pod name (the newest replaces the one before), and the
        :data:`PREVIOUS_KEPT` most recently forgotten pods: a pod a job's policy killed
        keeps its last words after its successor started, or its job ended.
        """
        pod_dir = self.pod_dir(uid)
        if not (pod_dir / LOGS_DIR).is_dir() or not (pod_dir / PLAN_FILE).is_file():
            return
        kept = self.data_dir / PREVIOUS_DIR / key.replace("/", "_")
        shutil.rmtree(kept, ignore_errors=True)
        kept.mkdir(mode=0o700, parents=True)
        with contextlib.suppress(OSError):
            os.replace(pod_dir / LOGS_DIR, kept / LOGS_DIR)
            os.replace(pod_dir / PLAN_FILE, kept / PLAN_FILE)
            with contextlib.suppress(FileNotFoundError):
                os.replace(pod_dir / STATUS_FILE, kept / STATUS_FILE)
        everyone = sorted(
            (path for path in kept.parent.iterdir() if path.is_dir()),
            key=lambda path: path.stat().st_mtime_ns,
        )
        for old in everyone[: max(len(everyone) - PREVIOUS_KEPT, 0)]:
            shutil.rmtree(old, ignore_errors=True)

    def previous_dir(self, key: str) -> Path | None:
        """The kept directory (plan and logs) of pod ``key``'s last forgotten incarnation."""
        kept = self.data_dir / PREVIOUS_DIR / key.replace("/", "_")
        return kept if (kept / PLAN_FILE).is_file() else None

    def log_file(self, uid: str, container: str, restart: int) -> Path:
        """The log of one run of one container (ValueError: a name that is not one entry)."""
        return self.pod_dir(uid) / LOGS_DIR / podfs.component(container) / f"{int(restart)}.log"

    def _pid(self, uid: str) -> int | None:
        try:
            return int((self.pod_dir(uid) / PID_FILE).read_text())
        except (OSError, ValueError):
            return None

    def _launch(self, pod_dir: Path) -> None:
        """Have the launcher fork the pod's supervisor (starting the launcher if need be)."""
        if self._launcher is None or self._launcher.poll() is not None:
            self.close()
            self._launcher = subprocess.Popen(
                [sys.executable, "-m", "vcbus.services.agent.app.launcher", str(self._socket)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                close_fds=True,
                env={**os.environ, "PYTHONPATH": _SOURCE_ROOT},
            )
            assert self._launcher.stdout is not None
            if self._launcher.stdout.readline() != b"ready\n":
                raise OSError("the supervisors' launcher did not start")
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
            connection.connect(str(self._socket))
            connection.sendall(f"{pod_dir}\n".encode())
            with connection.makefile("rb") as answer:
                reply = answer.readline().decode().strip()
        if not reply.startswith("ok "):
            raise OSError(f"the launcher could not start the supervisor of {pod_dir}: {reply}")

    @property
    def _socket(self) -> Path:
        return self.data_dir / LAUNCHER_SOCKET


def host_ports_in_use(low: int, high: int) -> frozenset[int]:
    """The local ports from ``low`` to ``high`` that a socket of the host holds.

    Read from ``/proc/net/{tcp,tcp6,udp,udp6}`` (listeners, connections, TIME_WAIT): a pod
    given one of them could not listen on it.
    """
    found: set[int] = set()
    for name in ("tcp", "tcp6", "udp", "udp6"):
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/net/{name}").read_text().splitlines()[1:]:
                fields = line.split()
                if len(fields) > 1:
                    port = int(fields[1].rpartition(":")[2], 16)
                    if low <= port <= high:
                        found.add(port)
    return frozenset(found)

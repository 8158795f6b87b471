"""A pod's supervisor: a small process of its own that runs the pod and records how it ends.

Forked by the launcher (:mod:`vcbus.services.agent.app.launcher`) in a session of its own
(``setsid``) for the pod directory ``POD_DIR``, so the pod outlives the agent (anchors:
Nomad's executor, Slurm's slurmstepd, containerd's shim). It reads ``POD_DIR/plan.json``
(:class:`PodPlan`), and:

- in containers (a plan whose ``runtime`` is ``podman``), first has each image, pulling
  again after a failed pull (:meth:`Supervisor._pull_images`: ``ImagePullBackOff`` while it
  waits), makes the pod's ``emptyDir`` volumes
  (:mod:`~vcbus.services.agent.app.podvolumes`) and its sandbox;
- runs the init containers one after the other, then the containers together, each a host
  process in a process group of its own, joined to the pod's cgroup and switched to the
  pod's user before it executes (``preexec``: cgroup, groups, gid, uid, in that order);
- enters the container's ``workingDir`` as the pod's user (after the switch: a directory
  the user cannot enter is an error, not a door);
- copies each container's output (stdout and stderr, merged as a kubelet's log reader shows
  them) to ``POD_DIR/logs/<container>/<restart>.log``
  (:mod:`~vcbus.services.agent.app.podlogs`), rotated at ``log_max_bytes`` with at most
  ``log_max_files`` files per run, and at most ``log_pod_max_files`` files and
  ``log_pod_max_bytes`` bytes per pod across its containers and restarts (the oldest
  closed files go first; each running container's current file can add ``log_max_bytes``
  more until it rotates);
- restarts a container as ``restartPolicy`` says (``Always``; ``OnFailure`` for an exit
  other than 0; never for ``Never``), after a back-off doubling from 1 s to 60 s (a
  kubelet's starts at 10 s and stops at 5 min), counting ``restart_count``;
- kills what a container left behind in its group when its main process exits (a
  container's processes end with it);
- past ``activeDeadlineSeconds`` (from its start) stops the pod: ``Failed``,
  ``DeadlineExceeded``;
- on SIGTERM (the agent's eviction or deletion) sends SIGTERM to every container's process
  group, waits ``terminationGracePeriodSeconds``, then SIGKILLs the groups and every process
  left in the pod's cgroup;
- a container killed by the kernel for its memory limit (the cgroup's ``oom_kill`` count
  grew) ends ``OOMKilled``;
- writes ``POD_DIR/status.json`` (:class:`PodReport`) whole at each change;
- once the pod has ended (however it ended), SIGKILLs every process left in its cgroup
  (a ``setsid`` one, a daemon) until none is left, then removes the cgroup (in
  containers: its containers, its sandbox, its volumes).

It imports only the standard library, msgspec, the agent's model and the agent's standard
library-only helpers (:mod:`~vcbus.services.agent.app.podfs`,
:mod:`~vcbus.services.agent.app.cgroups`, :mod:`~vcbus.services.agent.app.podlogs`,
:mod:`~vcbus.services.agent.app.podman`, :mod:`~vcbus.services.agent.app.podvolumes`), to
start fast.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import msgspec

from vcbus.contracts import reasons as codes
from vcbus.contracts.objects.pod import POD_COMPLETED, POD_ERROR, POD_STARTED, PodPhase
from vcbus.services.agent.app import podfs, podman, podvolumes
from vcbus.services.agent.app.cgroups import cgroup_procs, kill_cgroup, oom_kills
from vcbus.services.agent.app.podlogs import LOGS_DIR, RotatingLog, log_path, prune_logs
from vcbus.services.agent.model import ContainerReport, ContainerRun, Limits, PodPlan, PodReport

PLAN_FILE = "plan.json"
STATUS_FILE = "status.json"
WORK_DIR = "work"

BACKOFF_FIRST = 1.0
BACKOFF_MAX = 60.0
TICK = 0.05
"""Seconds between two looks at the containers when no output arrives."""

PR_SET_CHILD_SUBREAPER = 36
GROUP_WAIT = 2.0
"""How long a killed process group may take to vanish (its members reaped)."""

REASON_COMPLETED = POD_COMPLETED
REASON_ERROR = POD_ERROR
REASON_OOM = codes.REASON_OOM
REASON_DEADLINE = codes.REASON_DEADLINE
REASON_STOPPED = codes.REASON_STOPPED
REASON_START_ERROR = codes.REASON_START_ERROR
REASON_INIT_ERROR = codes.REASON_INIT_ERROR
REASON_PULL_BACKOFF = codes.REASON_PULL_BACKOFF
PULL_TRIES = 4
"""Pulls of an image before the pod fails (a kubelet tries on, every 5 min at most): a
batch pod waiting on a pull holds its node's resources."""
PULL_BACKOFF_FIRST = 1.0
"""Seconds before the second pull; doubling before each next one (1, 2, 4 s)."""

Ended = tuple[PodPhase, str, str, int | None]
"""How a pod ends: its phase, reason, message and exit code."""

_encoder = msgspec.json.Encoder()


def _now() -> datetime:
    """The time of a report.

    The supervisor is a process of its own, given no clock; the services' clock would
    import asyncio, a tenth of a second of every pod's start.
    """
    return datetime.now(UTC)  # noqa: TID251 - see above


def kill_group(pgid: int, wait: float = GROUP_WAIT) -> None:
    """SIGKILL a process group and wait (``wait`` seconds at most) until none of it is left."""
    until = time.monotonic() + wait
    while True:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            return
        with contextlib.suppress(ChildProcessError):  # orphans of the group are ours to reap
            while os.waitpid(-pgid, os.WNOHANG)[0]:
                pass
        if time.monotonic() >= until:
            return
        time.sleep(0.01)


def become_subreaper() -> None:
    """Have the pod's orphans reparented here (``PR_SET_CHILD_SUBREAPER``).

    A killed group is then reaped at once, not whenever the host's init gets to it.
    """
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def _preexec(
    limits: Limits, user: int | None, group: int | None, working_dir: str
) -> Callable[[], None]:
    """Join the pod's cgroup, drop to its user, enter its directory: in the child, before exec."""
    dirs = limits.dirs

    def run() -> None:
        os.setpgid(0, 0)
        pid = str(os.getpid()).encode()
        for directory in dirs:
            fd = os.open(os.path.join(directory, "cgroup.procs"), os.O_WRONLY)
            try:
                os.write(fd, pid)
            finally:
                os.close(fd)
        if group is not None:
            os.setgroups([])
            os.setgid(group)
        if user is not None:
            os.setuid(user)
        if working_dir:
            os.chdir(working_dir)

    return run


@dataclass
class Running:
    """A container's process, its log and its report so far."""

    spec: ContainerRun
    report: ContainerReport
    process: subprocess.Popen[bytes] | None = None
    log: RotatingLog | None = None
    restart_at: float | None = None
    started_oom: int = 0


@dataclass
class Supervisor:
    """Runs one pod's plan from ``pod_dir``."""

    pod_dir: Path
    plan: PodPlan
    report: PodReport = field(default_factory=PodReport)
    stop_requested: bool = False
    selector: selectors.DefaultSelector = field(default_factory=selectors.DefaultSelector)
    logs: dict[str, RotatingLog] = field(default_factory=dict)
    """Each container's log being written."""

    def write(self, **changes: object) -> None:
        """Change the report and write it whole."""
        self.report = msgspec.structs.replace(self.report, **changes)
        podfs.write_whole(self.pod_dir / STATUS_FILE, _encoder.encode(self.report))

    def run(self) -> int:
        """Run the pod to its end; the supervisor's exit status (0 once recorded)."""
        started = time.monotonic()
        deadline = (
            None
            if self.plan.active_deadline_seconds is None
            else started + self.plan.active_deadline_seconds
        )
        self.write(supervisor=os.getpid(), started_at=_now())
        inits = [c for c in self.plan.containers if c.init]
        mains = [c for c in self.plan.containers if not c.init]
        if self.plan.runtime:
            pulled = self._pull_images(deadline)
            if pulled is not None:
                return self._finish(*pulled)
            problem = podvolumes.prepare(
                self.pod_dir,
                self.plan.volumes,
                self.plan.user,
                self.plan.group,
                self.plan.limits.memory_bytes,
            )
            if problem:
                return self._finish(PodPhase.FAILED, REASON_START_ERROR, problem, 128)
            problem = podman.create_sandbox(
                uid=self.plan.uid,
                node=self.plan.node,
                hostname=self.plan.pod,
                subdomain=self.plan.subdomain,
                conf=podman.write_conf(str(self.pod_dir / podman.CONF_FILE)),
                publish=[(p.host_port, p.container_port, p.protocol) for p in self.plan.host_ports],
            )
            if problem:
                return self._finish(PodPhase.FAILED, REASON_START_ERROR, problem, 128)
        for spec in inits:
            ended = self._run_group([spec], deadline, init=True)
            if ended is not None:
                return self._finish(*ended)
        ended = self._run_group(mains, deadline, init=False)
        if ended is None:  # every container ended by itself, none to restart
            failed = [r for r in self.report.containers if r.exit_code not in (None, 0)]
            if failed:
                first = failed[0]
                return self._finish(PodPhase.FAILED, first.reason, "", first.exit_code)
            return self._finish(PodPhase.SUCCEEDED, REASON_COMPLETED, "", 0)
        return self._finish(*ended)

    def _pull_images(self, deadline: float | None) -> Ended | None:
        """Have each image as its pull policy says; None, or how the pod ends.

        A failed pull is tried again after :data:`PULL_BACKOFF_FIRST`, then twice as long
        each time, :data:`PULL_TRIES` pulls in all; meanwhile the pod waits ``Pending``,
        ``ImagePullBackOff``, the last error and the next pull in its message.
        """
        for image, policy in dict.fromkeys((c.image, c.pull_policy) for c in self.plan.containers):
            for attempt in range(1, PULL_TRIES + 1):
                reason, message = podman.pull_problem(image, policy)
                if not reason:
                    break
                if reason != podman.REASON_PULL:
                    return PodPhase.FAILED, reason, message, None
                if attempt == PULL_TRIES:
                    message = f"{message} (gave up after {PULL_TRIES} pulls)"
                    return PodPhase.FAILED, reason, message, None
                delay = PULL_BACKOFF_FIRST * 2 ** (attempt - 1)
                waiting = (
                    f"back-off {delay:g}s pulling again (pull {attempt} of {PULL_TRIES} failed)"
                )
                self.write(reason=REASON_PULL_BACKOFF, message=f"{message}; {waiting}")
                until = time.monotonic() + delay
                while time.monotonic() < until:
                    if self.stop_requested:
                        return PodPhase.FAILED, REASON_STOPPED, "stopped by the agent", None
                    if deadline is not None and time.monotonic() >= deadline:
                        return PodPhase.FAILED, REASON_DEADLINE, self._past_deadline(), None
                    time.sleep(TICK)
        if self.report.reason:
            self.write(reason="", message="")
        return None

    def _past_deadline(self) -> str:
        return (
            f"the pod ran past its activeDeadlineSeconds ({self.plan.active_deadline_seconds:g}s)"
        )

    def _finish(self, phase: PodPhase, reason: str, message: str, code: int | None) -> int:
        # what the containers left in the pod's cgroup (a setsid child, a daemon) ends now
        kill_cgroup([Path(d) for d in self.plan.limits.dirs], reap=True)
        if self.plan.runtime:
            podman.remove_pod(self.plan.node, self.plan.uid)
            left = podvolumes.release(self.pod_dir)
            if left:
                message = f"{message}; volumes {left}" if message else f"volumes {left}"
        self.write(
            phase=phase,
            reason=reason,
            message=message,
            exit_code=code,
            finished_at=_now(),
            stopped=self.stop_requested,
        )
        return 0

    def _run_group(
        self, specs: list[ContainerRun], deadline: float | None, *, init: bool
    ) -> Ended | None:
        """Run ``specs`` together until each ended for good; None, or how the pod ends."""
        runs = [Running(spec, ContainerReport(name=spec.name)) for spec in specs]
        for run in runs:
            problem = self._start(run)
            if problem:
                self._kill_all(runs)
                reason = REASON_INIT_ERROR if init else REASON_START_ERROR
                return PodPhase.FAILED, reason, problem, 128
        if not init and self.report.phase != PodPhase.RUNNING:
            self.write(phase=PodPhase.RUNNING, reason=POD_STARTED, ran=True)
        self._publish(runs)
        while True:
            if self.stop_requested:
                self._terminate(runs)
                return PodPhase.FAILED, REASON_STOPPED, "stopped by the agent", 143
            if deadline is not None and time.monotonic() >= deadline:
                self._terminate(runs)
                return PodPhase.FAILED, REASON_DEADLINE, self._past_deadline(), None
            self._pump(TICK)
            changed = False
            for run in runs:
                changed = self._reap(run, init=init) or changed
                if run.restart_at is not None and time.monotonic() >= run.restart_at:
                    problem = self._start(run)
                    changed = True
                    if problem:
                        self._kill_all(runs)
                        return PodPhase.FAILED, REASON_START_ERROR, problem, 128
            if changed:
                self._publish(runs)
            if all(r.process is None and r.restart_at is None for r in runs):
                if init and runs[0].report.exit_code not in (None, 0):
                    failed = runs[0].report
                    message = f"init container {failed.name} exited {failed.exit_code}"
                    return PodPhase.FAILED, REASON_INIT_ERROR, message, failed.exit_code
                return None

    def _publish(self, runs: list[Running]) -> None:
        done = {r.name: r for r in self.report.containers}
        for run in runs:
            done[run.report.name] = run.report
        restarts = sum(r.restart_count for r in done.values())
        self.write(containers=tuple(done.values()), restart_count=restarts)

    def _start(self, run: Running) -> str:
        """Start a container's process; an error message when it cannot start."""
        spec = run.spec
        restart = run.report.restart_count
        if run.log is not None:
            run.log.close()
        run.log = RotatingLog(
            log_path(self.pod_dir, spec.name, restart),
            self.plan.log_max_bytes,
            self.plan.log_max_files,
            on_rotate=self._prune_logs,
        )
        self.logs[spec.name] = run.log
        self._prune_logs()
        run.started_oom = self._oom_kills()
        argv, env, preexec = (
            list(spec.argv),
            spec.env,
            _preexec(self.plan.limits, self.plan.user, self.plan.group, spec.working_dir),
        )
        if self.plan.runtime:  # podman runs as the agent; the container as the pod's user
            argv, env, preexec = (
                self._podman_run(spec),
                {**os.environ, "CONTAINERS_CONF": str(self.pod_dir / podman.CONF_FILE)},
                _preexec(Limits(), None, None, ""),
            )
        try:
            process = subprocess.Popen(
                argv,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                close_fds=True,
                preexec_fn=preexec,  # noqa: PLW1509 - single-threaded
            )
        except (OSError, subprocess.SubprocessError) as exc:
            where = f" in {spec.working_dir}" if spec.working_dir else ""
            who = "" if self.plan.user is None else f" as uid {self.plan.user}"
            message = f"container {spec.name}: cannot run {spec.argv[0]!r}{who}{where}: {exc}"
            run.log.write(f"{message}\n".encode())
            run.report = msgspec.structs.replace(
                run.report, state="terminated", exit_code=128, reason=REASON_START_ERROR
            )
            return message
        assert process.stdout is not None
        os.set_blocking(process.stdout.fileno(), False)
        self.selector.register(process.stdout, selectors.EVENT_READ, run)
        run.process = process
        run.restart_at = None
        run.report = msgspec.structs.replace(
            run.report, state="running", exit_code=None, reason="", pgid=process.pid
        )
        return ""

    def _podman_run(self, spec: ContainerRun) -> list[str]:
        """``podman run`` for a container of the plan."""
        cut = len(spec.argv) if spec.command_len < 0 else spec.command_len
        return podman.run_argv(
            uid=self.plan.uid,
            node=self.plan.node,
            hostname=self.plan.pod,
            container=spec.name,
            image=spec.image,
            command=spec.argv[:cut],
            args=spec.argv[cut:],
            env=spec.env,
            working_dir=spec.working_dir,
            files_dir=self.plan.files_dir
            if (Path(self.plan.files_dir) / "etc" / "volcano").is_dir()
            else "",
            user=self.plan.user,
            group=self.plan.group,
            memory_bytes=self.plan.limits.memory_bytes,
            cpu_millis=self.plan.limits.cpu_millis,
            sandbox=True,
            mounts=podvolumes.binds(self.pod_dir, self.plan.volumes, spec.mounts),
        )

    def _oom_kills(self) -> int:
        return oom_kills(self.plan.limits.dirs, self.plan.limits.version)

    def _prune_logs(self) -> None:
        """Hold the pod's logs to its bounds (the files being written are kept)."""
        prune_logs(
            self.pod_dir / LOGS_DIR,
            {log.path for log in self.logs.values()},
            self.plan.log_pod_max_bytes,
            self.plan.log_pod_max_files,
        )

    def _pump(self, timeout: float) -> None:
        """Copy what the containers wrote to their logs, waiting ``timeout`` at most."""
        for key, _ in self.selector.select(timeout):
            run: Running = key.data
            self._drain(run)

    def _drain(self, run: Running) -> None:
        process = run.process
        if process is None or process.stdout is None or run.log is None:
            return
        while True:
            try:
                data = os.read(process.stdout.fileno(), 65536)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if not data:
                with contextlib.suppress(KeyError, ValueError):
                    self.selector.unregister(process.stdout)
                return
            run.log.write(data)

    def _reap(self, run: Running, *, init: bool) -> bool:
        """Note a container's exit, kill what it left, plan its restart; whether it ended."""
        process = run.process
        if process is None or process.poll() is None:
            return False
        kill_group(process.pid)
        self._drain(run)
        with contextlib.suppress(KeyError, ValueError):
            assert process.stdout is not None
            self.selector.unregister(process.stdout)
            process.stdout.close()
        code = process.returncode
        exit_code = 128 - code if code < 0 else code
        reason = REASON_COMPLETED if exit_code == 0 else REASON_ERROR
        if exit_code != 0 and self._oom_kills() > run.started_oom:
            # the kernel killed a process of the pod for its memory limit while this
            # container ran: its main process, or a child whose death ended it (a shell's
            # 137); the kubelet reads the cgroup's OOM kills the same way
            reason = REASON_OOM
        if self.plan.runtime:
            # podman's state says so where it reads the kill; else a SIGKILL nobody here
            # sent, under a memory limit (cgroup v1 under cgroupfs hides the count)
            killed = exit_code == 137 and self.plan.limits.memory_bytes and not self.stop_requested
            if exit_code != 0 and (killed or podman.oom_killed(self.plan.uid, run.spec.name)):
                reason = REASON_OOM
            podman.remove(self.plan.uid, run.spec.name)
        run.process = None
        report = msgspec.structs.replace(
            run.report, state="terminated", exit_code=exit_code, reason=reason
        )
        policy = self.plan.restart_policy
        again = policy == "Always" or (policy == "OnFailure" and exit_code != 0)
        if init and policy == "Always":
            again = exit_code != 0  # init containers restart only on failure
        if again and not self.stop_requested:
            delay = min(BACKOFF_FIRST * 2 ** min(report.restart_count, 16), BACKOFF_MAX)
            run.restart_at = time.monotonic() + delay
            report = msgspec.structs.replace(report, restart_count=report.restart_count + 1)
        run.report = report
        return True

    def _terminate(self, runs: list[Running]) -> None:
        """SIGTERM every group, wait the grace period (copying output), then SIGKILL."""
        for run in runs:
            run.restart_at = None
            if run.process is not None and self.plan.runtime:
                podman.signal(self.plan.uid, run.spec.name, "TERM")
            elif run.process is not None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(run.process.pid, signal.SIGTERM)
        until = time.monotonic() + self.plan.grace_seconds
        while time.monotonic() < until and any(r.process is not None for r in runs):
            self._pump(TICK)
            for run in runs:
                self._reap(run, init=False)
                run.restart_at = None
        self._kill_all(runs)
        self._publish(runs)

    def _kill_all(self, runs: list[Running]) -> None:
        """SIGKILL every container's group and every process left in the pod's cgroup."""
        for run in runs:
            if run.process is not None:
                if self.plan.runtime:
                    podman.signal(self.plan.uid, run.spec.name, "KILL")
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(run.process.pid, signal.SIGKILL)
                run.process.wait()
                self._reap(run, init=False)
                run.restart_at = None
        for pid in cgroup_procs([Path(d) for d in self.plan.limits.dirs]):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)


def main(argv: list[str]) -> int:
    """Supervise the pod of the directory ``argv[0]``."""
    pod_dir = Path(argv[0])
    plan = msgspec.json.decode((pod_dir / PLAN_FILE).read_bytes(), type=PodPlan)
    supervisor = Supervisor(pod_dir, plan)
    become_subreaper()

    def stop(_signum: int, _frame: object) -> None:
        supervisor.stop_requested = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    return supervisor.run()

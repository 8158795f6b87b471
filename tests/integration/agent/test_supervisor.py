"""A pod's supervisor and the host runtime, with real processes (no broker).

Each test runs a small plan in a data directory of its own and waits, bounded, for the
supervisor's report; nothing is left running.
"""

from __future__ import annotations

import os
import shutil
import signal
import stat
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from vcbus.contracts.objects.pod import PodPhase
from vcbus.services.agent.app.logserver import read_log
from vcbus.services.agent.app.runtime import HostProcesses
from vcbus.services.agent.model import ContainerRun, PodPlan, PodReport

pytestmark = pytest.mark.timeout(60)

PATH = {"PATH": "/usr/local/bin:/usr/bin:/bin"}
WAIT = 30.0


@pytest.fixture
def runtime() -> Iterator[HostProcesses]:
    """A runtime in a directory of its own under ``/tmp`` (reachable by ``nobody``)."""
    base = Path(tempfile.mkdtemp(prefix="vcbus-runtime-"))
    base.chmod(0o711)
    host = HostProcesses(base / "agent", None)
    yield host
    for pod in (base / "agent" / "pods").iterdir():
        host.forget(pod.name)
    host.close()
    shutil.rmtree(base)


def sh(script: str, *, name: str = "main", init: bool = False) -> ContainerRun:
    return ContainerRun(name=name, argv=("sh", "-c", script), env=PATH, init=init)


def until_final(runtime: HostProcesses, uid: str) -> PodReport:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        report = runtime.report(uid)
        assert report is not None, "the supervisor is gone"
        if report.is_final:
            return report
        time.sleep(0.05)
    raise AssertionError(f"pod {uid} did not end in {WAIT}s: {runtime.report(uid)}")


def group_alive(pgid: int) -> bool:
    """Whether a process of the group runs (a zombie waiting for its reaper does not)."""
    for stat_file in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat_file.read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if fields[2] == str(pgid) and fields[0] != "Z":
            return True
    return False


def until_group_gone(pgid: int) -> bool:
    deadline = time.monotonic() + WAIT
    while group_alive(pgid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_init_containers_run_in_order_then_the_container_with_its_exit_code(
    runtime: HostProcesses,
) -> None:
    plan = PodPlan(
        pod="p",
        uid="u1",
        restart_policy="Never",
        containers=(
            sh("echo first >> $0", init=True, name="one"),
            sh("echo second >> $0", init=True, name="two"),
            sh("cat $0; exit 3"),
        ),
    )
    order = runtime.work_dir("u1") / "order"
    plan = PodPlan(
        pod=plan.pod,
        uid=plan.uid,
        restart_policy=plan.restart_policy,
        containers=tuple(
            ContainerRun(name=c.name, argv=(*c.argv, str(order)), env=c.env, init=c.init)
            for c in plan.containers
        ),
    )
    runtime.start(plan, {})
    report = until_final(runtime, "u1")
    assert (report.phase, report.reason, report.exit_code) == (PodPhase.FAILED, "Error", 3)
    assert read_log(runtime.log_file("u1", "main", 0)) == b"first\nsecond\n"


def test_a_failing_init_container_fails_the_pod_before_the_containers_run(
    runtime: HostProcesses,
) -> None:
    plan = PodPlan(
        pod="p",
        uid="u2",
        restart_policy="Never",
        containers=(sh("exit 4", init=True, name="setup"), sh("echo never")),
    )
    runtime.start(plan, {})
    report = until_final(runtime, "u2")
    assert (report.phase, report.reason, report.exit_code, report.ran) == (
        PodPhase.FAILED,
        "InitError",
        4,
        False,
    )
    assert not runtime.log_file("u2", "main", 0).exists()


def test_on_failure_restarts_count_and_each_run_keeps_its_log(runtime: HostProcesses) -> None:
    counter = "n=$(cat count 2>/dev/null || echo 0); echo $((n+1)) > count; echo run $n"
    plan = PodPlan(
        pod="p",
        uid="u3",
        restart_policy="OnFailure",
        containers=(sh(f'cd "$HOME"; {counter}; [ "$n" -ge 2 ]'),),
    )
    plan = PodPlan(
        pod="p",
        uid="u3",
        restart_policy="OnFailure",
        containers=(
            ContainerRun(
                name="main",
                argv=plan.containers[0].argv,
                env={**PATH, "HOME": str(runtime.work_dir("u3"))},
            ),
        ),
    )
    runtime.start(plan, {})
    report = until_final(runtime, "u3")
    assert (report.phase, report.restart_count) == (PodPhase.SUCCEEDED, 2)
    assert [read_log(runtime.log_file("u3", "main", run)) for run in (0, 1, 2)] == [
        b"run 0\n",
        b"run 1\n",
        b"run 2\n",
    ]


def test_a_pod_past_its_active_deadline_is_stopped_deadline_exceeded(
    runtime: HostProcesses,
) -> None:
    plan = PodPlan(
        pod="p",
        uid="u4",
        active_deadline_seconds=0.5,
        grace_seconds=0.5,
        containers=(sh("sleep 60"),),
    )
    runtime.start(plan, {})
    report = until_final(runtime, "u4")
    assert (report.phase, report.reason) == (PodPhase.FAILED, "DeadlineExceeded")
    assert not group_alive(report.containers[0].pgid)


def test_a_command_that_cannot_run_fails_the_pod_with_why(runtime: HostProcesses) -> None:
    plan = PodPlan(
        pod="p",
        uid="u5",
        containers=(ContainerRun(name="main", argv=("/no/such/program",), env=PATH),),
    )
    runtime.start(plan, {})
    report = until_final(runtime, "u5")
    assert (report.phase, report.reason) == (PodPhase.FAILED, "StartError")
    assert "/no/such/program" in report.message


def test_a_stopped_pod_ends_after_sigterm_and_sigkill_with_nothing_left(
    runtime: HostProcesses,
) -> None:
    plan = PodPlan(
        pod="p",
        uid="u6",
        grace_seconds=0.5,
        containers=(sh("trap '' TERM; sleep 60 & sleep 60"),),
    )
    runtime.start(plan, {})
    deadline = time.monotonic() + WAIT
    while not (report := runtime.report("u6")) or not report.ran:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    runtime.stop("u6")
    report = until_final(runtime, "u6")
    assert (report.phase, report.stopped) == (PodPhase.FAILED, True)
    assert not group_alive(report.containers[0].pgid)


def test_a_supervisor_killed_is_reported_gone_and_forget_ends_its_pod(
    runtime: HostProcesses,
) -> None:
    runtime.start(PodPlan(pod="p", uid="u7", containers=(sh("sleep 60"),)), {})
    deadline = time.monotonic() + WAIT
    while not (report := runtime.report("u7")) or not report.ran:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    os.kill(report.supervisor, signal.SIGKILL)
    deadline = time.monotonic() + WAIT
    while runtime.report("u7") is not None:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    runtime.forget("u7")
    assert until_group_gone(report.containers[0].pgid)
    assert not runtime.pod_dir("u7").exists()


def test_a_pod_started_again_is_not_run_twice(runtime: HostProcesses) -> None:
    plan = PodPlan(pod="p", uid="u10", restart_policy="Never", containers=(sh("echo ran"),))
    runtime.start(plan, {})
    runtime.start(plan, {})
    until_final(runtime, "u10")
    assert read_log(runtime.log_file("u10", "main", 0)) == b"ran\n"


def test_logs_rotate_at_their_bound_and_read_back_oldest_first(runtime: HostProcesses) -> None:
    lines = "i=0; while [ $i -lt 400 ]; do printf 'line %04d %s\\n' $i 0123456789; i=$((i+1)); done"
    plan = PodPlan(
        pod="p",
        uid="u8",
        restart_policy="Never",
        log_max_bytes=2048,
        log_max_files=3,
        containers=(sh(lines),),
    )
    runtime.start(plan, {})
    until_final(runtime, "u8")
    path = runtime.log_file("u8", "main", 0)
    files = sorted(path.parent.iterdir())
    assert [f.name for f in files] == ["0.log", "0.log.1", "0.log.2"]
    assert all(f.stat().st_size <= 2048 for f in files)
    kept = read_log(path).decode().splitlines()[1:]  # the oldest file starts mid-line
    assert len(kept) > 200
    assert kept == [f"line {i:04d} 0123456789" for i in range(400 - len(kept), 400)]


def test_a_pods_files_and_directory_belong_to_its_user_alone(runtime: HostProcesses) -> None:
    plan = PodPlan(
        pod="p",
        uid="u9",
        restart_policy="Never",
        user=65534,
        group=65534,
        containers=(sh('id -u; cat "$0"'),),
    )
    hosts = str(runtime.files_dir("u9") / "etc/volcano/worker.host")
    plan = PodPlan(
        pod="p",
        uid="u9",
        restart_policy="Never",
        user=65534,
        group=65534,
        containers=(ContainerRun(name="main", argv=(*plan.containers[0].argv, hosts), env=PATH),),
    )
    runtime.start(plan, {"etc/volcano/worker.host": "10.0.0.7"})
    until_final(runtime, "u9")
    assert read_log(runtime.log_file("u9", "main", 0)) == b"65534\n10.0.0.7"
    for private in (runtime.work_dir("u9"), runtime.files_dir("u9")):
        status = private.stat()
        assert (status.st_uid, stat.S_IMODE(status.st_mode)) == (65534, 0o700)

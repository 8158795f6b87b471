"""``vcbus up``'s supervision: the back-off policy, and processes restarted by it."""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path

from vcbus.services.cli.supervise import (
    Backoff,
    Health,
    Supervisor,
    exit_text,
    exited,
    restarted,
)


def test_the_back_off_doubles_from_its_first_wait_to_its_most():
    backoff = Backoff(first=1.0, most=30.0)
    assert [backoff.delay(n) for n in range(1, 8)] == [1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0]
    assert backoff.delay(10_000) == 30.0


def test_crashes_in_a_row_grow_the_wait_and_a_steady_run_resets_it():
    backoff = Backoff(first=1.0, most=30.0, steady=60.0)
    health = Health()
    for _ in range(3):
        health = restarted(exited(health, backoff, ran_for=2.0, now=100.0, how="status 1"))
    assert (health.restarts, health.crashes) == (3, 3)
    again = exited(health, backoff, ran_for=2.0, now=100.0, how="status 1")
    assert again.restart_at == 108.0
    steady = exited(health, backoff, ran_for=600.0, now=100.0, how="signal 9 (SIGKILL)")
    assert (steady.crashes, steady.restart_at) == (1, 101.0)
    assert steady.text() == "restarting, 3 restarts (last: signal 9 (SIGKILL))"
    assert restarted(steady).text() == "running, 4 restarts (last: signal 9 (SIGKILL))"
    assert Health().text() == "running"


def test_an_exit_is_named_by_status_or_signal():
    assert exit_text(3) == "status 3"
    assert exit_text(-signal.SIGKILL) == "signal 9 (SIGKILL)"


def test_a_process_that_exits_is_started_again_once_its_back_off_is_over(tmp_path: Path):
    now = [0.0]
    said: list[str] = []
    supervisor = Supervisor(lambda: now[0], Backoff(first=5.0), said.append)
    log = tmp_path / "crash.log"
    argv = [sys.executable, "-c", "print('ran', flush=True); raise SystemExit(3)"]
    supervisor.start("crash", argv, {}, log)
    first = supervisor.children["crash"].process
    assert first is not None
    first.wait()
    now[0] = 1.0

    supervisor.check()

    assert said == [f"crash exited (status 3); restarting it in 5s (see {log})\n"]
    assert supervisor.health()["crash"].text() == "restarting, 0 restarts (last: status 3)"
    now[0] = 5.9
    supervisor.check()
    assert supervisor.health()["crash"].restart_at == 6.0  # not started before its back-off
    assert len(said) == 1
    now[0] = 6.0
    supervisor.check()
    second = supervisor.children["crash"].process
    assert second is not None
    assert second.pid != first.pid
    assert said[1] == f"crash restarted (pid {second.pid}, restart 1)\n"
    second.wait()
    assert log.read_text() == "ran\nran\n"  # the log of every run, in order
    supervisor.stop()
    supervisor.check()
    assert supervisor.children["crash"].process is None  # stopped: never started again


def test_stop_terminates_then_kills_a_process_that_ignores_sigterm(tmp_path: Path):
    supervisor = Supervisor(lambda: 0.0, say=lambda _text: None)
    stubborn = (
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "print('up', flush=True); time.sleep(600)"
    )
    supervisor.start("stubborn", [sys.executable, "-c", stubborn], {}, tmp_path / "s.log")
    process = supervisor.children["stubborn"].process
    assert process is not None
    for _ in range(600):  # its SIGTERM handler is set once it said so
        if "up" in (tmp_path / "s.log").read_text():
            break
        time.sleep(0.05)
    supervisor.stop(wait=0.5)
    assert process.returncode == -signal.SIGKILL

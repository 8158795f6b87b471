"""The chaos run's fleet: what it did to each process is what the exit check judges."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from services.cli.serve import priority_classes
from shared.scheduling.scheduler import parse_conf
from tests.chaos.checks import check_exits
from tests.chaos.fleet import Fleet, Incarnation, Replica
from tests.chaos.run import preemption_args
from tests.chaos.workload import PRIORITY_CLASSES

KILLED_AT = datetime(2026, 1, 1, tzinfo=UTC)
PIPES: list[subprocess.Popen[bytes]] = []


@pytest.fixture(autouse=True)
def _close_pipes() -> Iterator[None]:
    yield
    while PIPES:
        popen = PIPES.pop()
        if popen.poll() is None:
            popen.kill()
        popen.wait()
        assert popen.stdout is not None
        popen.stdout.close()


def process(replica: Replica, code: str) -> Incarnation:
    """Run ``code`` as the replica's next incarnation (instead of a service): its standard
    error is its log; it may print one line, read by the test (the pipe is closed when the
    test ends)."""
    number = len(replica.incarnations)
    log = replica.log_dir / f"{replica.label}.{number}.log"
    with log.open("wb") as stderr:
        popen = subprocess.Popen(
            [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=stderr
        )
    PIPES.append(popen)
    incarnation = Incarnation(replica, number, log, popen)
    replica.incarnations.append(incarnation)
    return incarnation


def test_a_crash_later_hit_by_a_planned_kill_is_still_a_violation(tmp_path: Path) -> None:
    fleet = Fleet(tmp_path)
    replica = fleet.add("cluster", "a", {})
    crashed = process(replica, "import sys; sys.exit('boom')")
    crashed.popen.wait()
    replica.kill(KILLED_AT)
    assert crashed.killed_at is None
    survivor = process(replica, "import time; time.sleep(60)")
    replica.kill(KILLED_AT)
    assert survivor.killed_at is not None
    assert [(v.check, v.detail) for v in check_exits(fleet.ends())] == [
        ("process-died", "cluster-a.0 exited with 1, not killed:\nboom")
    ]


def test_every_incarnation_that_ran_to_a_clean_stop_passes(tmp_path: Path) -> None:
    fleet = Fleet(tmp_path)
    replica = fleet.add("admission", "b", {})
    stoppable = process(
        replica,
        "import signal, sys, time\n"
        "signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))\n"
        "print('ready', flush=True)\n"
        "time.sleep(60)",
    )
    assert stoppable.popen.stdout is not None
    assert stoppable.popen.stdout.readline() == b"ready\n"
    assert fleet.stop() == {"admission-b.0": 0}
    assert check_exits(fleet.ends()) == []


def test_a_chaos_run_serves_preempt_with_valid_configurations(tmp_path: Path) -> None:
    """Issue 23: the allocator runs preempt, podgroup-enqueue takes back, classes known."""
    args = preemption_args(tmp_path)
    allocator = parse_conf(Path(args["allocator"][1]).read_text())
    assert allocator.actions == ("allocate", "preempt", "backfill")
    enqueue = parse_conf(Path(args["podgroup-enqueue"][1]).read_text())
    assert enqueue.arguments["take-back"] is True
    assert priority_classes(args["job-controller"][1]) == PRIORITY_CLASSES

"""The chaos run's fleet: what it did to each process is what the exit check judges."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.chaos.checks import check_exits
from tests.chaos.fleet import AGENT, Fleet, Incarnation, Replica
from tests.chaos.run import Kill, preemption_args, serving, takeovers
from tests.chaos.workload import PRIORITY_CLASSES
from vcbus.core.scheduling.scheduler import parse_conf
from vcbus.services.cli.serve import priority_classes

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
    """The allocator runs preempt, podgroup-enqueue takes back, classes known."""
    args = preemption_args(tmp_path)
    allocator = parse_conf(Path(args["allocator"][1]).read_text())
    assert allocator.actions == ("allocate", "preempt", "backfill")
    enqueue = parse_conf(Path(args["podgroup-enqueue"][1]).read_text())
    assert enqueue.arguments["take-back"] is True
    assert priority_classes(args["job-controller"][1]) == PRIORITY_CLASSES


def acquired_at(replica: Replica, at: datetime) -> Incarnation:
    """An incarnation whose log says it took the lease at ``at``."""
    line = json.dumps({"event": "lease_acquired", "timestamp": at.isoformat()})
    return process(replica, f"import sys; sys.stderr.write({line!r} + '\\n')")


def test_a_lease_takeover_is_undisturbed_only_when_no_other_replica_was_killed_before_it(
    tmp_path: Path,
) -> None:
    fleet = Fleet(tmp_path)
    first, second = fleet.add("allocator", "a", {}), fleet.add("allocator", "b", {})
    acquired_at(first, KILLED_AT)  # a.0 holds the lease
    acquired_at(second, KILLED_AT + timedelta(seconds=9))  # b.0 takes it after a.0's kill
    process(first, "pass")  # a.1, the standby, is killed before it takes over
    acquired_at(first, KILLED_AT + timedelta(seconds=45))  # a.2 takes it after b.0's kill
    for incarnation in fleet.incarnations():
        incarnation.popen.wait()

    def kill(label: str, after: float, *, held: bool) -> Kill:
        return Kill(label, "allocator", KILLED_AT + timedelta(seconds=after), after, held, [], held)

    kills = [kill("allocator-a.0", 0, held=True), kill("allocator-b.0", 30, held=True)]
    kills.append(kill("allocator-a.1", 33, held=False))

    frozen = [(KILLED_AT + timedelta(seconds=2), KILLED_AT + timedelta(seconds=5))]

    found = [
        (t.killed, t.by, t.seconds, t.undisturbed, t.frozen_seconds)
        for t in takeovers(fleet, kills, frozen)
    ]

    assert found == [
        ("allocator-a.0", "allocator-b.0", 9.0, True, 3.0),
        ("allocator-b.0", "allocator-a.2", 15.0, False, 0.0),
    ]


def logged(replica: Replica, *events: str) -> Incarnation:
    """An incarnation that wrote ``events`` as its log lines, then runs on."""
    lines = "".join(json.dumps({"event": e}) + "\n" for e in events)
    return process(
        replica,
        f"import sys, time; sys.stderr.write({lines!r}); sys.stderr.flush(); time.sleep(60)",
    )


def test_a_replica_serves_once_its_log_says_so(tmp_path: Path) -> None:
    """What the run waits for before its SIGTERM: a replica still starting would die of it."""
    fleet = Fleet(tmp_path)
    agent = fleet.add(AGENT, "real-0", {})
    cluster = fleet.add("cluster", "a", {})
    allocator = fleet.add("allocator", "a", {})
    starting = [logged(agent, "agent_starting"), logged(cluster, "service_starting")]
    starting.append(logged(allocator, "service_starting"))
    ready = [logged(agent, "node_registered"), logged(cluster, "partitions_assigned")]
    ready.append(logged(allocator, "lease_acquired"))
    for incarnation in [*starting, *ready]:
        deadline = time.monotonic() + 30
        while not incarnation.lines() and time.monotonic() < deadline:
            time.sleep(0.05)
    assert [serving(i) for i in starting] == [False, False, False]
    assert [serving(i) for i in ready] == [True, True, True]

"""The chaos run, CI-sized: 60 jobs, 6 kills, the broker frozen 5 s; nothing lost, nothing twice.

The same driver as ``make chaos`` (``tests/chaos``): every service as its own process (two
replicas of admission, job-controller and cluster; an active and a standby of
podgroup-enqueue and allocator) and two node agents whose nodes run the real jobs as host
processes, jobs of every shape, a random process SIGKILLed every 7 s and restarted (each
agent at least once), the broker frozen halfway. The checks read the topics: every job
final as its shape says, no pod run twice (per job uid, task, index and retry count),
bound twice or ended twice, none lost, no node over its allocatable, no locked node taking
another job's pod, status counts equal to the pods' phases, nothing dead-lettered, no
process exit but the planned ones; and no process of a real pod outlives the jobs. The
figures are printed (``pytest -s``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.chaos.run import ChaosConfig, render, run_chaos, write_report

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def test_nothing_is_lost_or_done_twice_when_processes_are_killed_and_the_broker_freezes(
    tmp_path: Path,
) -> None:
    config = ChaosConfig(
        jobs=60,
        kills=6,
        seed=11,
        kill_interval=7.0,
        outage=5.0,
        finish_timeout=300.0,
        log_dir=tmp_path / "logs",
    )
    report = run_chaos(config)
    write_report(report, tmp_path)
    sys.stdout.write(render(report) + "\n")
    assert report.passed, render(report)
    assert report.jobs_final == config.jobs
    assert len(report.kills) == config.kills
    killed = {k.label.rpartition(".")[0] for k in report.kills if k.service == "agent"}
    assert killed == {"agent-real-0", "agent-real-1"}

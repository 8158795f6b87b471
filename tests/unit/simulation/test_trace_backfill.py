"""Planned starts at admission (docs/design.md#planned-start): a head admitted before its room is
free keeps what its planned start needs, and nothing more.

Ten one-cpu nodes; podgroup-enqueue's budget is 1.2 x 10 cpus less what runs. ``job-1``
(3 cpus) ends at 100 s and ``job-2`` (5 cpus) at 500 s: 2 cpus idle, a budget of 4.
``job-3`` (4 cpus) is admitted and waits, the head: at 100 s it takes ``job-1``'s 3 cpus
and one idle now, which its plan keeps. Its admission spends the budget.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.bench.reference import simulate
from tests.bench.traces import WITHOUT_AGING
from vcbus.services.simulation.run import simulate_document
from vcbus.services.simulation.swf import Shape, read_trace, trace_document

TRACE = """\
; MaxNodes: 10
; MaxProcs: 10
1    0 -1  100 3 -1 -1 3 -1 -1 1 -1 -1 -1 0 -1 -1 -1
2    0 -1  500 5 -1 -1 5 -1 -1 1 -1 -1 -1 0 -1 -1 -1
3   10 -1   20 4 -1 -1 4 -1 -1 1 -1 -1 -1 0 -1 -1 -1
4   20 -1    5 1 -1 -1 1 -1 -1 1 -1 -1 -1 0 -1 -1 -1
5   30 -1  300 2 -1 -1 2 -1 -1 1 -1 -1 -1 0 -1 -1 -1
"""


def _outcome(trace: str, walltime: str) -> dict[str, Any]:
    """The outcome of ``trace`` on ten one-cpu nodes."""
    document = trace_document(read_trace(trace.splitlines()), Shape(nodes=10), walltime=walltime)
    outcome: dict[str, Any] = simulate_document(document)
    return outcome


def _starts() -> dict[str, float]:
    outcome = _outcome(TRACE, "run")
    return {
        key.removeprefix("default/"): job["times"]["running"]
        for key, job in outcome["jobs"].items()
    }


def test_short_job_runs_at_once_when_an_admitted_head_holds_the_budget():
    starts = _starts()
    assert starts["job-4"] < 21  # it ends by job-3's planned start, in the idle room


def test_long_job_that_would_delay_the_head_waits_and_the_head_starts_as_planned():
    starts = _starts()
    assert 100 <= starts["job-3"] < 101
    assert starts["job-5"] >= 100  # 2 cpus for 300 s would take the kept cpu


OVERTAKEN = """\
; MaxNodes: 10
; MaxProcs: 10
1    0 -1  100 8 -1 -1 8 -1 -1 1 -1 -1 -1 0 -1 -1 -1
2   10 -1   50 4 -1 -1 4 -1 -1 1 -1 -1 -1 0 -1 -1 -1
3   20 -1    5 1 -1 -1 1 -1 -1 1 -1 -1 -1 0 -1 -1 -1
"""
"""``job-2`` (4 cpus) waits for ``job-1``'s end at 100 s; ``job-3`` (1 cpu, 5 s) overtakes it."""


def _elections(walltime: str) -> list[str]:
    outcome = _outcome(OVERTAKEN, walltime)
    assert outcome["jobs"]["default/job-3"]["times"]["running"] < 21
    return [entry["job"] for entry in outcome["timeline"] if entry["event"] == "elected"]


def test_an_overtaken_job_with_a_planned_start_is_not_a_reservation_target():
    assert _elections("run") == []  # its plan keeps its room: no node is locked


def test_an_overtaken_job_without_a_time_limit_is_still_elected():
    assert _elections("request") == ["default/job-2"]


LUBLIN = Path(__file__).resolve().parents[3] / "examples" / "traces" / "lublin_256.swf"


def test_only_the_head_keeps_room_so_thirty_lublin_jobs_wait_as_under_easy():
    # jobs 2288-2317: a job the budget turned away behind an admitted head kept room of
    # its own, so a later job that EASY backfills waited (the p50 wait was 89 s longer);
    # in EASY's queue order (first come, first served: the aging order off)
    trace = read_trace(LUBLIN.read_text().splitlines())
    document = trace_document(trace, Shape(nodes=256), start=2288, count=30, walltime="run")
    document["config"] = dict(WITHOUT_AGING)
    outcome: dict[str, Any] = simulate_document(document)
    waits: dict[str, float] = outcome["summary"]["wait"]
    jobs = [job for job in trace.jobs if job.processors <= 256][2288:2318]
    easy: dict[str, float] = simulate(jobs, 256, "easy")["wait"]  # type: ignore[assignment]
    for figure in ("avg", "p50", "p95", "max"):
        assert abs(waits[figure] - easy[figure]) < 0.1  # each step of vcbus takes 5 ms

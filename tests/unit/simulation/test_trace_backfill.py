"""Planned starts at admission (SPEC A15): a head admitted before its room is free keeps
what its planned start needs, and nothing more.

Ten one-cpu nodes; podgroup-enqueue's budget is 1.2 x 10 cpus less what runs. ``job-1``
(3 cpus) ends at 100 s and ``job-2`` (5 cpus) at 500 s: 2 cpus idle, a budget of 4.
``job-3`` (4 cpus) is admitted and waits, the head: at 100 s it takes ``job-1``'s 3 cpus
and one idle now, which its plan keeps. Its admission spends the budget.
"""

from __future__ import annotations

from typing import Any

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


def _starts() -> dict[str, float]:
    document = trace_document(read_trace(TRACE.splitlines()), Shape(nodes=10), walltime="run")
    outcome: dict[str, Any] = simulate_document(document)
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

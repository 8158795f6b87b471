"""The default queue order on a trace (the ``aging`` plugin): short jobs first, and a job
that waited hours before one that waited minutes.

Four one-cpu nodes, every job asks all four, with its run time as its time limit.
"""

from __future__ import annotations

from typing import Any

from vcbus.services.simulation.run import simulate_document
from vcbus.services.simulation.swf import Shape, read_trace, trace_document

SHORT_FIRST = """\
; MaxNodes: 4
; MaxProcs: 4
1    0 -1   100 4 -1 -1 4 -1 -1 1 -1 -1 -1 0 -1 -1 -1
2   10 -1  1000 4 -1 -1 4 -1 -1 1 -1 -1 -1 0 -1 -1 -1
3   20 -1    10 4 -1 -1 4 -1 -1 1 -1 -1 -1 0 -1 -1 -1
"""
"""At 100 s ``job-2`` (1,000 s) and ``job-3`` (10 s) wait for the whole cluster."""

AGED = """\
; MaxNodes: 4
; MaxProcs: 4
1      0 -1  20000 4 -1 -1 4 -1 -1 1 -1 -1 -1 0 -1 -1 -1
2      1 -1  36000 4 -1 -1 4 -1 -1 1 -1 -1 -1 0 -1 -1 -1
3     10 -1    100 4 -1 -1 4 -1 -1 1 -1 -1 -1 0 -1 -1 -1
4  19000 -1    100 4 -1 -1 4 -1 -1 1 -1 -1 -1 0 -1 -1 -1
"""
"""``job-2`` (10 h) waits behind ``job-1`` until 20,000 s; ``job-3`` and ``job-4`` are short,
one as old as ``job-2``, one submitted 1,000 s before the cluster frees."""


def _starts(trace: str, walltime: str = "run") -> dict[str, float]:
    document = trace_document(read_trace(trace.splitlines()), Shape(nodes=4), walltime=walltime)
    outcome: dict[str, Any] = simulate_document(document)
    return {
        key.removeprefix("default/"): job["times"]["running"]
        for key, job in outcome["jobs"].items()
    }


def test_the_short_job_goes_before_the_older_long_one() -> None:
    starts = _starts(SHORT_FIRST)
    assert 100 <= starts["job-3"] < 101  # first come, first served would start job-2 here
    assert 110 <= starts["job-2"] < 112  # it waits for the short job's 10 s, not more


def test_a_job_that_waited_hours_goes_before_a_short_one_that_waited_minutes() -> None:
    starts = _starts(AGED)
    assert 20_000 <= starts["job-3"] < 20_001  # as old and far shorter: first
    # job-2 has waited 5.6 h (standing 31.7); job-4 1,100 s (standing 11.1): job-2 first,
    # where the expansion factor alone (0.56 against 11) would start job-4
    assert 20_100 <= starts["job-2"] < 20_102
    assert starts["job-4"] >= 56_100


def test_without_time_limits_jobs_start_in_arrival_order() -> None:
    starts = _starts(SHORT_FIRST, walltime="request")
    assert starts["job-2"] < starts["job-3"]

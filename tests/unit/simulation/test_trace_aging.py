"""The default queue order on a trace (the ``aging`` plugin): short jobs first, and a job
that waited hours before one that waited minutes.

Four one-cpu nodes, every job asks all four, with its run time as its time limit.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tests.bench.traces import WITH_OLDEST_PLAN
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


TWO_PLANS = """\
; MaxNodes: 5
; MaxProcs: 5
1   0 -1  100 2 -1 -1 2 -1 -1 1 -1 -1 -1 0 -1 -1 -1
2   0 -1  300 2 -1 -1 2 -1 -1 1 -1 -1 -1 0 -1 -1 -1
3   1 -1   50 5 -1 -1 5 -1 -1 1 -1 -1 -1 0 -1 -1 -1
4   2 -1  100 3 -1 -1 3 -1 -1 1 -1 -1 -1 0 -1 -1 -1
5  10 -1  150 1 -1 -1 1 -1 -1 1 -1 -1 -1 0 -1 -1 -1
"""
"""Five 1-cpu nodes: 2 free at 100 s, 2 more at 300 s. ``job-3``, the oldest waiting, needs
all five (its planned start 300 s); ``job-4``, the aging head, three (100 s, before it);
``job-5`` (1 cpu, 150 s) comes at 10 s and ends before 300 s, but would hold a cpu
``job-4`` needs at 100 s."""


def _starts(
    trace: str, walltime: str = "run", config: Mapping[str, object] | None = None
) -> dict[str, float]:
    nodes = read_trace(trace.splitlines()).processors or 1
    document = trace_document(read_trace(trace.splitlines()), Shape(nodes=nodes), walltime=walltime)
    if config is not None:
        document["config"] = dict(config)
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


def test_the_aging_head_alone_keeps_a_planned_start_so_a_later_job_delays_the_second() -> None:
    starts = _starts(TWO_PLANS)
    assert 10 <= starts["job-5"] < 11  # it delays no plan of the head (job-3) alone
    assert 160 <= starts["job-4"] < 161  # so job-4 waits for it


def test_with_oldest_plan_the_oldest_and_the_aging_head_both_keep_their_planned_starts() -> None:
    starts = _starts(TWO_PLANS, config=WITH_OLDEST_PLAN)
    assert 300 <= starts["job-3"] < 301
    assert 100 <= starts["job-4"] < 101  # its planned start, around job-3's
    assert 350 <= starts["job-5"] < 351  # it would delay one of them until job-3 ended

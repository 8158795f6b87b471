"""The reference simulator's backfill with two reservations, the oldest job's and the aging
head's (``tests.bench.reservations``), beside EASY and EASY in the aging order."""

from __future__ import annotations

from tests.bench.reference import simulate, starts
from tests.bench.reservations import reserving
from tests.bench.traces import TRACES
from vcbus.services.simulation.swf import TraceJob, read_trace

BOTH = reserving(oldest_after=0.0)
"""The oldest job's reservation, then the aging head's."""


def _job(submit: int, run: int, processors: int) -> TraceJob:
    return TraceJob(number=0, submit=submit, run=run, processors=processors, requested=None)


def test_a_later_job_the_aging_order_puts_first_does_not_delay_the_oldest() -> None:
    # 4 cpus: at 100 s the oldest (1,000 s) and a later one (20 s) both want them all
    jobs = [_job(0, 100, 4), _job(1, 1000, 4), _job(50, 20, 4)]
    assert starts(jobs, 4, "aging") == [0, 120, 100]  # the short one first: the oldest waits
    assert starts(jobs, 4, BOTH) == [0, 100, 1100]  # as EASY
    assert starts(jobs, 4, "easy") == [0, 100, 1100]


def test_a_backfill_that_would_delay_the_aging_heads_planned_start_waits() -> None:
    # 5 cpus: 2 free at 100 s, 2 more at 300 s. The oldest (all 5 for 50 s) is reserved at
    # 300 s, the aging head (3 cpus for 100 s) at 100 s before it; a 1-cpu job of 150 s
    # coming at 10 s ends before 300 s but would take one of the head's 3 cpus at 100 s
    jobs = [_job(0, 100, 2), _job(0, 300, 2), _job(1, 50, 5), _job(2, 100, 3), _job(10, 150, 1)]
    assert starts(jobs, 5, "aging") == [0, 0, 300, 160, 10]  # the head waits for it
    assert starts(jobs, 5, BOTH) == [0, 0, 300, 100, 350]


def _slice(count: int) -> list[TraceJob]:
    trace = read_trace((TRACES / "lublin_256.swf").read_text().splitlines())
    return [job for job in trace.jobs if job.processors <= 256][:count]


def test_with_one_reservation_it_schedules_as_easy_and_as_easy_in_aging_order() -> None:
    jobs = _slice(400)
    arrival = reserving(oldest_after=None, aging=False)
    assert starts(jobs, 256, arrival) == starts(jobs, 256, "easy")
    assert starts(jobs, 256, reserving(oldest_after=None)) == starts(jobs, 256, "aging")


def test_the_oldest_reservation_waits_for_its_threshold() -> None:
    jobs = _slice(400)
    never = starts(jobs, 256, reserving(oldest_after=None))
    assert starts(jobs, 256, reserving(oldest_after=1e9)) == never
    assert starts(jobs, 256, BOTH) != never
    assert simulate(jobs, 256, BOTH)["finishedJobs"] == len(jobs)

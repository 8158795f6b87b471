"""Planned starts (docs/design.md#planned-start): when a gang fits by the running pods' deadlines,
what it keeps."""

from __future__ import annotations

from datetime import datetime, timedelta

import numpy as np

from vcbus.contracts.keys import JobKey
from vcbus.core.runtime.clock import EPOCH
from vcbus.core.scheduling.framework.plan import (
    Hold,
    Plan,
    Release,
    Releases,
    Shape,
    allowed_rows,
    earliest_start,
    earliest_start_around,
    ever_fits,
    fit,
)

CPU = np.array([1.0])


def _idle(*cpus: float) -> np.ndarray:
    return np.array([[c] for c in cpus], dtype=np.float64)


def _at(seconds: float) -> datetime:
    return EPOCH + timedelta(seconds=seconds)


def _gang(count: int, rows: int) -> list[Shape]:
    return [Shape(CPU, np.ones(rows, dtype=np.bool_), count)]


def test_gang_starts_when_enough_deadlines_have_passed():
    releases = [Release(_at(50), 1, CPU), Release(_at(20), 2, CPU), Release(_at(90), 3, CPU)]
    idle = _idle(1, 0, 0, 0)
    found = earliest_start(idle, Releases.of(releases, idle), _gang(3, 4), EPOCH)
    assert found is not None
    start, kept = found
    assert start == _at(50)
    assert kept.tolist() == [True, False, False, False]


def test_gang_that_fits_now_starts_now_on_the_rows_it_uses():
    found = earliest_start(_idle(1, 1, 1), Releases.of([], _idle(1, 1, 1)), _gang(2, 3), EPOCH)
    assert found is not None
    assert found[0] == EPOCH
    assert found[1].tolist() == [True, True, False]


def test_pods_without_deadlines_never_release_so_no_plan():
    assert earliest_start(_idle(1, 0), Releases.of([], _idle(1, 0)), _gang(2, 2), EPOCH) is None


def test_fit_prefers_released_capacity_leaving_idle_rows_to_others():
    used = fit(_idle(1, 1, 1), _idle(0, 0, 1), _gang(1, 3))
    assert used is not None
    assert used[:, 0].tolist() == [0.0, 0.0, 1.0]


def test_fit_respects_the_rows_a_shape_may_use():
    shape = Shape(CPU, np.array([False, True]), 2)
    assert fit(_idle(4, 1), _idle(0, 0), [shape]) is None


def test_kept_rows_go_only_to_jobs_that_end_by_the_planned_start():
    plan = Plan(job=JobKey("default/big"), start=_at(100), kept=np.array([True, False]))
    other = JobKey("default/small")
    assert allowed_rows([plan], other, _at(100), 2).tolist() == [True, True]
    assert allowed_rows([plan], other, _at(101), 2).tolist() == [False, True]
    assert allowed_rows([plan], other, None, 2).tolist() == [False, True]
    assert allowed_rows([plan], plan.job, None, 2).tolist() == [True, True]


def test_one_shape_found_by_bisection_starts_where_the_replay_of_every_moment_does():
    # a second shape of no pods changes no fit but makes earliest_start replay each moment
    random = np.random.default_rng(7)
    for _ in range(200):
        rows = int(random.integers(1, 12))
        idle = np.array([[float(c), float(m)] for c, m in random.integers(0, 3, (rows, 2))])
        releases = [
            Release(_at(float(random.integers(1, 30))), int(random.integers(rows)), request)
            for request in random.integers(1, 3, (int(random.integers(0, 25)), 2)).astype(float)
        ]
        allowed = random.random(rows) < 0.8
        request = random.integers(1, 3, 2).astype(float)
        shape = Shape(request, allowed, int(random.integers(1, 2 * rows + 2)))
        nothing = Shape(request, allowed, 0)
        schedule = Releases.of(releases, idle)
        bisected = earliest_start(idle, schedule, [shape], EPOCH)
        replayed = earliest_start(idle, schedule, [shape, nothing], EPOCH)
        assert ever_fits(idle, schedule, [shape], EPOCH) is (replayed is not None)
        if replayed is None:
            assert bisected is None
            continue
        assert bisected is not None
        assert bisected[0] == replayed[0]
        assert bisected[1].tolist() == replayed[1].tolist()


def test_a_plan_made_around_a_hold_starts_before_it_only_if_it_ends_by_then():
    # four 1-cpu rows: row 0 idle now, row 1 free at 50 s, rows 2-3 at 100 s; a job planned
    # before holds rows 2-3 from 200 s to 400 s
    idle = _idle(1, 0, 0, 0)
    releases = Releases.of(
        [Release(_at(50), 1, CPU), Release(_at(100), 2, CPU), Release(_at(100), 3, CPU)], idle
    )
    holds = [Hold(_at(200), _at(400), _idle(0, 0, 1, 1))]

    def around(count: int, seconds: int) -> tuple[datetime, list[bool]]:
        found = earliest_start_around(
            idle, releases, holds, _gang(count, 4), EPOCH, limit=timedelta(seconds=seconds)
        )
        assert found is not None
        return found[0], found[1].tolist()

    assert around(3, 60) == (_at(100), [False] * 4)  # it ends by 200 s, on rows released
    assert around(3, 500)[0] == _at(400)  # it would not: after the hold
    assert around(2, 500) == (_at(50), [True, False, False, False])  # rows the hold leaves
    alone = earliest_start(idle, releases, _gang(3, 4), EPOCH)
    assert alone is not None
    assert alone[0] == _at(100)  # without the hold

"""Aging: short jobs first, and a waiting job's standing grows until it is the head."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import msgspec
import pytest

from tests.support.builders import build_podgroup, build_queue
from tests.support.scheduling import DEFAULT_TIERS, NOW
from vcbus.core.scheduling.framework.conf import ConfError
from vcbus.core.scheduling.framework.priority_queue import PriorityQueue
from vcbus.core.scheduling.framework.session import Session, open_session
from vcbus.core.scheduling.plugins import PLUGIN_BUILDERS
from vcbus.core.scheduling.plugins.aging import NAME, OLDEST_PLAN, standing
from vcbus.core.scheduling.scheduler import parse_conf
from vcbus.core.scheduling.snapshot import ClusterSnapshot, PodGroupState

HOUR = 3600.0


def _job(name: str, waited: float, limit: int | None, uid: str | None = None) -> PodGroupState:
    state = build_podgroup(
        name, "ns", "default", 1, creation=NOW - timedelta(seconds=waited), uid=uid
    )
    podgroup = msgspec.structs.replace(state.podgroup, active_deadline_seconds=limit)
    return dataclasses.replace(state, podgroup=podgroup)


def _session(*jobs: PodGroupState, oldest_plan: bool = False) -> Session:
    """A session of the default configuration at ``NOW`` (``aging-oldest-plan`` as given)."""
    snapshot = ClusterSnapshot.build(queues=[build_queue("default")], podgroups=list(jobs))
    tiers = DEFAULT_TIERS
    if oldest_plan:
        tiers = tuple(
            dataclasses.replace(
                tier,
                plugins=tuple(
                    dataclasses.replace(p, arguments={OLDEST_PLAN: True}) if p.name == NAME else p
                    for p in tier.plugins
                ),
            )
            for tier in DEFAULT_TIERS
        )
    return open_session(snapshot, tiers, builders=PLUGIN_BUILDERS, now=NOW)


def _order(*jobs: PodGroupState, oldest_plan: bool = False) -> list[str]:
    """The default configuration's job order of ``jobs`` at ``NOW``."""
    ssn = _session(*jobs, oldest_plan=oldest_plan)
    queue = PriorityQueue(ssn.job_order_fn)
    for job in ssn.jobs.values():
        queue.push(job)
    return [queue.pop().name for _ in range(len(ssn.jobs))]


def test_among_jobs_that_waited_alike_the_shortest_goes_first() -> None:
    assert _order(_job("long", 600, 36_000), _job("short", 600, 60), _job("mid", 600, 3_600)) == [
        "short",
        "mid",
        "long",
    ]


def test_a_short_job_that_waited_passes_an_older_long_one() -> None:
    # FCFS (the order without aging) would put "long" first: it is older
    assert _order(_job("long", 700, 36_000), _job("short", 600, 60)) == ["short", "long"]


def test_a_long_job_that_waited_hours_goes_before_a_short_one_that_waited_minutes() -> None:
    # expansion factor alone: short 10.0 against long 0.4; the age term lifts long to 16.4,
    # and past "older" (16.16: older, but its limit of 1,000 h gains it almost nothing)
    assert _order(
        _job("older", 4.02 * HOUR, 3_600_000),
        _job("short", 600, 60),
        _job("long", 4 * HOUR, 36_000),
    ) == ["long", "older", "short"]


def test_with_oldest_plan_the_oldest_waiting_job_goes_first_and_is_kept() -> None:
    jobs = (_job("short", 600, 60), _job("oldest", 700, 36_000), _job("mid", 650, 3_600))
    assert _order(*jobs) == ["short", "mid", "oldest"]
    assert _order(*jobs, oldest_plan=True) == ["oldest", "short", "mid"]
    assert _session(*jobs).oldest_planned == {}
    kept = _session(*jobs, oldest_plan=True).oldest_planned
    assert [key.split("/")[1] for key in kept.values()] == ["oldest"]


def test_the_oldest_kept_is_a_job_with_a_time_limit() -> None:
    jobs = (_job("unlimited", 900, None), _job("old", 700, 36_000), _job("short", 600, 60))
    assert _order(*jobs, oldest_plan=True) == ["old", "short", "unlimited"]


def test_jobs_without_a_time_limit_keep_their_age_order() -> None:
    assert _order(_job("young", 10, None), _job("old", 20, None), _job("mid", 15, None)) == [
        "old",
        "mid",
        "young",
    ]


def test_equal_standing_falls_back_to_uid() -> None:
    assert _order(_job("b", 60, 60, uid="u1"), _job("a", 60, 60, uid="u2")) == ["b", "a"]


def test_standing_is_the_expansion_factor_less_one_plus_the_age_term() -> None:
    assert standing(600, 60, HOUR) == pytest.approx(10 + (600 / HOUR) ** 2)
    assert standing(600, None, HOUR) == pytest.approx((600 / HOUR) ** 2)
    assert standing(-5, 60, HOUR) == 0.0  # a clock behind the submission counts as no wait
    assert standing(20, 1, HOUR) == pytest.approx(2 + (20 / HOUR) ** 2)  # limits below 10 s


def test_aging_scale_is_read_and_checked_at_start_up() -> None:
    conf = parse_conf(
        "actions: allocate\ntiers:\n- plugins:\n  - name: aging\n"
        "    arguments:\n      aging-scale: 2h\n"
    )
    assert conf.tiers[0].plugins[0].arguments["aging-scale"] == "2h"
    with pytest.raises(ConfError, match="aging-scale must be positive"):
        parse_conf(
            "actions: allocate\ntiers:\n- plugins:\n  - name: aging\n"
            "    arguments:\n      aging-scale: 0s\n"
        )
    with pytest.raises(ConfError, match="aging"):
        parse_conf(
            "actions: allocate\ntiers:\n- plugins:\n  - name: aging\n"
            "    arguments:\n      aging-scale: soon\n"
        )

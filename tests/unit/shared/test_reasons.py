"""SPEC A8's reason ranking, shared by the scheduler and the read model."""

from __future__ import annotations

from shared import reasons
from shared.reasons import REASON_RANK, reason_rank
from shared.scheduling.framework import job_updater
from shared.scheduling.snapshot import WILL_BIND_TIMEOUT


def test_ranks_follow_spec_a8() -> None:
    assert list(REASON_RANK) == sorted(REASON_RANK, key=reason_rank)
    assert reason_rank("QueueClosed") < reason_rank("Infeasible") < reason_rank("ClusterOverused")
    assert reason_rank("WaitingForReservation") < reason_rank("ReservationExpired")


def test_an_unlisted_allocator_reason_ranks_with_gang_unschedulable() -> None:
    assert reason_rank("NotEnoughTasks") == reason_rank("GangUnschedulable")


def test_the_scheduler_ranks_with_the_same_codes() -> None:
    assert reasons.WILL_BIND_TIMEOUT == WILL_BIND_TIMEOUT
    assert job_updater.REASON_RANK is REASON_RANK
    assert job_updater.reason_rank is reason_rank

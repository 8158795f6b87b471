"""SPEC A8's reason ranking, shared by the scheduler and the read model."""

from __future__ import annotations

from shared.reasons import REASON_RANK, reason_rank


def test_ranks_follow_spec_a8() -> None:
    assert list(REASON_RANK) == sorted(REASON_RANK, key=reason_rank)
    assert reason_rank("QueueClosed") < reason_rank("Infeasible") < reason_rank("ClusterOverused")
    assert reason_rank("WaitingForReservation") < reason_rank("ReservationExpired")


def test_an_unlisted_allocator_reason_ranks_with_gang_unschedulable() -> None:
    assert reason_rank("NotEnoughTasks") == reason_rank("GangUnschedulable")

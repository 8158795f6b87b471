"""docs/design.md#pending-reasons's reason ranking, shared by the scheduler and the read model, and
docs/cli.md's table."""

from __future__ import annotations

import re

from tests.support.lockfile import ROOT
from vcbus.core.reasons import REASON_RANK, reason_rank


def test_ranks_follow_spec_a8() -> None:
    assert list(REASON_RANK) == sorted(REASON_RANK, key=reason_rank)
    assert reason_rank("QueueClosed") < reason_rank("Infeasible") < reason_rank("ClusterOverused")
    assert reason_rank("WaitingForReservation") < reason_rank("ReservationExpired")


def test_an_unlisted_allocator_reason_ranks_with_gang_unschedulable() -> None:
    assert reason_rank("NotEnoughTasks") == reason_rank("GangUnschedulable")


def test_the_cli_page_table_lists_every_ranked_reason_in_rank_order() -> None:
    readme = (ROOT / "docs" / "cli.md").read_text()
    rows = re.findall(r"^\| (\d+) \| `(\w+)` \|", readme, flags=re.MULTILINE)

    assert [code for _, code in rows] == list(REASON_RANK)
    assert [int(rank) for rank, _ in rows] == list(range(1, len(REASON_RANK) + 1))

"""``LocksHonoured``: the allocator says when it has a reservation's node locks in its view."""

from __future__ import annotations

from datetime import UTC, datetime

from contracts import JobKey
from services.allocator.cycle import locks_honoured
from shared.scheduling.holds import Reservation
from shared.step import Ctx

NOW = datetime(2026, 1, 1, tzinfo=UTC)
TARGET = JobKey("ns/big")


def test_locks_are_acknowledged_once_when_the_allocator_first_sees_them() -> None:
    reservation = Reservation(target_job=TARGET, locked_nodes=frozenset({"n2", "n1"}), generation=3)
    first = locks_honoured(reservation, None, Ctx(now=NOW))
    assert first is not None
    assert (first.job, first.generation, first.nodes, first.occurred_at) == (
        TARGET,
        3,
        ("n1", "n2"),
        NOW,
    )
    assert locks_honoured(reservation, first, Ctx(now=NOW)) is None


def test_a_new_lock_is_acknowledged_when_the_locked_set_grows() -> None:
    before = Reservation(target_job=TARGET, locked_nodes=frozenset({"n1"}), generation=3)
    after = Reservation(target_job=TARGET, locked_nodes=frozenset({"n1", "n2"}), generation=3)
    first = locks_honoured(before, None, Ctx(now=NOW))
    grown = locks_honoured(after, first, Ctx(now=NOW))
    assert grown is not None
    assert grown.nodes == ("n1", "n2")
    assert grown.event_id != (first.event_id if first else "")


def test_nothing_is_acknowledged_when_no_node_is_locked() -> None:
    assert locks_honoured(Reservation(), None, Ctx(now=NOW)) is None
    elected = Reservation(target_job=TARGET, generation=1)
    assert locks_honoured(elected, None, Ctx(now=NOW)) is None


def test_a_takeover_acknowledges_the_same_locks_under_the_same_id() -> None:
    reservation = Reservation(target_job=TARGET, locked_nodes=frozenset({"n1"}), generation=2)
    before = locks_honoured(reservation, None, Ctx(now=NOW))
    later = locks_honoured(reservation, None, Ctx(now=datetime(2026, 1, 2, tzinfo=UTC)))
    assert before is not None
    assert later is not None
    assert before.event_id == later.event_id

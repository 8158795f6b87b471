"""``LocksHonoured``: the allocator says when it has a reservation's node locks in its view."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import pytest

from vcbus.contracts import (
    Event,
    JobKey,
    LocksHonoured,
    NodeName,
    NodeRegistered,
    NodesLocked,
    TargetJobElected,
)
from vcbus.contracts.objects.node import Node
from vcbus.core.bus.kafka_settings import KafkaSettings
from vcbus.core.runtime.clock import SystemClock
from vcbus.core.runtime.settings import Settings
from vcbus.core.scheduling.holds import Reservation
from vcbus.core.step import Ctx
from vcbus.services.allocator import app as allocator_app
from vcbus.services.allocator.cycle import locks_honoured

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


def test_locks_dropped_with_a_discarded_cycle_are_acknowledged_by_the_next(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A cycle whose events were never published (its lease lapsed) leaves nothing said.

    The allocator remembers what it last published only once it is published (``assume``):
    had it remembered it while deciding, the next cycle would bind around the locks without
    saying it honours them (chaos under load saw this after a discarded cycle).
    """
    captured: dict[str, Any] = {}

    def capture(name: str, clock: object, **parts: Any) -> Any:
        captured.update(parts)
        return None

    monkeypatch.setattr(allocator_app, "scheduling_service", capture)
    allocator_app.build_service(
        Settings(kafka=KafkaSettings(bootstrap_servers="unused")), SystemClock()
    )
    apply, decide, assume = captured["apply"], captured["decide"], captured["assume"]
    node = Node(name="n1", allocatable={"cpu": 4000, "pods": 10})
    apply(NodeRegistered(event_id="n1", occurred_at=NOW, node=node))
    apply(TargetJobElected(event_id="e", occurred_at=NOW, job=TARGET, generation=1))
    apply(
        NodesLocked(
            event_id="l", occurred_at=NOW, job=TARGET, nodes=(NodeName("n1"),), generation=1
        )
    )

    def honoured(events: Sequence[Event]) -> list[LocksHonoured]:
        return [event for event in events if isinstance(event, LocksHonoured)]

    discarded = decide(Ctx(now=NOW))
    assert len(honoured(discarded)) == 1
    again = decide(Ctx(now=NOW))  # the first cycle's events were dropped, never assumed
    assert len(honoured(again)) == 1
    assume(again)
    assert honoured(decide(Ctx(now=NOW))) == []

"""The view's reservation and first-seen times: rebuilt from the topics, robust to order."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pytest

from tests.support.builders import build_podgroup
from vcbus.contracts.events.podgroups import PodGroupCreated, PodGroupDeleted, PodGroupUpdated
from vcbus.contracts.events.podgroups_status import PodGroupPhaseChanged
from vcbus.contracts.events.reservations import NodesLocked, NodesUnlocked, TargetJobElected
from vcbus.contracts.keys import JobKey, NodeName
from vcbus.contracts.objects.podgroup import PodGroup, PodGroupPhase
from vcbus.core.scheduling.cluster_view import ClusterView
from vcbus.core.scheduling.holds import Reservation, fold_reservation

T0 = datetime(2026, 1, 1, tzinfo=UTC)
A, B = JobKey("ns/a"), JobKey("ns/b")


def _at(seconds: int) -> datetime:
    return T0 + timedelta(seconds=seconds)


def _podgroup(uid: str) -> PodGroup:
    return build_podgroup("a", "ns", "default", 1, uid=uid).podgroup


def test_first_seen_is_the_creation_event_time_when_updates_follow() -> None:
    view = ClusterView()
    view.apply(PodGroupCreated(event_id="c", occurred_at=_at(0), podgroup=_podgroup("u1")))
    view.apply(PodGroupUpdated(event_id="u", occurred_at=_at(30), podgroup=_podgroup("u1")))
    assert view.snapshot().podgroups[A].first_seen == _at(0)


def test_first_seen_is_the_same_when_a_new_view_replays_the_topic() -> None:
    """The time survives a restart: it comes from the events, not from the clock."""
    events: list[PodGroupCreated | PodGroupUpdated] = [
        PodGroupCreated(event_id="c", occurred_at=_at(0), podgroup=_podgroup("u1")),
        PodGroupUpdated(event_id="u", occurred_at=_at(30), podgroup=_podgroup("u1")),
    ]
    first, second = ClusterView(), ClusterView()
    for event in events:
        first.apply(event)
        second.apply(event)
    second.apply(events[0])
    assert first.snapshot().podgroups[A].first_seen == second.snapshot().podgroups[A].first_seen


def test_first_seen_restarts_when_the_podgroup_is_recreated() -> None:
    view = ClusterView()
    view.apply(PodGroupCreated(event_id="c1", occurred_at=_at(0), podgroup=_podgroup("u1")))
    view.apply(PodGroupDeleted(event_id="d", occurred_at=_at(5), job=A, name="a"))
    view.apply(PodGroupCreated(event_id="c2", occurred_at=_at(9), podgroup=_podgroup("u2")))
    assert view.snapshot().podgroups[A].first_seen == _at(9)


def test_phase_of_a_deleted_podgroup_is_ignored_when_it_arrives_after_its_successor() -> None:
    view = ClusterView()
    view.apply(PodGroupCreated(event_id="c2", occurred_at=_at(9), podgroup=_podgroup("u2")))
    view.apply(
        PodGroupPhaseChanged(
            event_id="late",
            occurred_at=_at(3),
            job=A,
            podgroup="a",
            phase=PodGroupPhase.RUNNING,
            uid="u1",
        )
    )
    assert view.snapshot().podgroups[A].phase is PodGroupPhase.PENDING


def test_phase_applies_when_it_names_the_current_podgroup() -> None:
    view = ClusterView()
    view.apply(PodGroupCreated(event_id="c2", occurred_at=_at(9), podgroup=_podgroup("u2")))
    view.apply(
        PodGroupPhaseChanged(
            event_id="p",
            occurred_at=_at(10),
            job=A,
            podgroup="a",
            phase=PodGroupPhase.INQUEUE,
            uid="u2",
        )
    )
    assert view.snapshot().podgroups[A].phase is PodGroupPhase.INQUEUE


def _epochs() -> list[TargetJobElected | NodesLocked | NodesUnlocked]:
    """Reservation 1 for a (elected, two locks, unlock), then reservation 2 for b."""
    return [
        TargetJobElected(event_id="e1", occurred_at=_at(0), job=A, generation=1),
        NodesLocked(
            event_id="l1", occurred_at=_at(0), job=A, nodes=(NodeName("n1"),), generation=1
        ),
        NodesLocked(
            event_id="l2", occurred_at=_at(1), job=A, nodes=(NodeName("n2"),), generation=1
        ),
        NodesUnlocked(
            event_id="u1",
            occurred_at=_at(2),
            job=A,
            nodes=(NodeName("n1"), NodeName("n2")),
            generation=1,
        ),
        TargetJobElected(event_id="e2", occurred_at=_at(2), job=B, generation=2),
        NodesLocked(
            event_id="l3", occurred_at=_at(2), job=B, nodes=(NodeName("n2"),), generation=2
        ),
    ]


EXPECTED = Reservation(
    target_job=B, locked_nodes=frozenset({"n2"}), elected_at=_at(2), generation=2, locked_at=_at(2)
)


def _fold(events: list[TargetJobElected | NodesLocked | NodesUnlocked]) -> Reservation:
    state = Reservation()
    for event in events:
        state = fold_reservation(state, event)
    return state


def test_reservation_is_rebuilt_when_the_events_are_replayed_in_order() -> None:
    assert _fold(_epochs()) == EXPECTED


@pytest.mark.parametrize("seed", range(15))
def test_reservation_is_the_same_when_two_jobs_partitions_interleave(seed: int) -> None:
    """The topic is keyed by job: each job's events stay in order, the two jobs' mix."""
    events = _epochs()
    of_a, of_b = events[:4], events[4:]
    slots = list(itertools.combinations(range(len(events)), len(of_b)))[seed]
    merged, ia, ib = [], iter(of_a), iter(of_b)
    for i in range(len(events)):
        merged.append(next(ib) if i in slots else next(ia))
    assert _fold(merged) == EXPECTED


def test_reservation_does_not_change_when_an_event_is_applied_twice() -> None:
    events = _epochs()
    doubled = [e for event in events for e in (event, event)]
    assert _fold(doubled) == EXPECTED


def test_locks_without_generation_apply_as_they_come_when_written_by_an_older_writer() -> None:
    state = fold_reservation(
        Reservation(), NodesLocked(event_id="x", occurred_at=_at(0), job=A, nodes=(NodeName("n1"),))
    )
    assert (state.target_job, state.locked_nodes) == (A, frozenset({"n1"}))
    state = fold_reservation(
        state, NodesUnlocked(event_id="y", occurred_at=_at(1), job=A, nodes=(NodeName("n1"),))
    )
    assert state == Reservation()


def test_backoff_of_an_expired_target_is_kept_across_elections_until_it_ends() -> None:
    """docs/design.md#reservation (bounded): the unlock of an expired target carries the end of its
    backoff."""
    big, other = JobKey("ns/big"), JobKey("ns/other")
    expired = NodesUnlocked(
        event_id="u1",
        occurred_at=_at(600),
        job=big,
        nodes=(NodeName("n1"),),
        reason="ReservationExpired: not ready 600s after its election (lock-max)",
        generation=1,
        backoff_until=_at(900),
    )
    state = fold_reservation(Reservation(target_job=big, generation=1), expired)
    assert state == Reservation(generation=1, backoff=((big, _at(900)),))
    elected = TargetJobElected(event_id="e2", occurred_at=_at(601), job=other, generation=2)
    state = fold_reservation(state, elected)
    assert state.backoff == ((big, _at(900)),)
    ready = NodesUnlocked(event_id="u2", occurred_at=_at(950), job=other, nodes=(), generation=2)
    assert fold_reservation(state, ready).backoff == (), "ended backoffs are dropped"

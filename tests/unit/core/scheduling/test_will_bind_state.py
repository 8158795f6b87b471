"""The view's will-bind reservations: folded from ``capacity.reservations``, idempotent."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tests.support.builders import build_podgroup
from vcbus.contracts.events.capacity_reservations import (
    CapacityReleased,
    CapacityReserved,
    ReservedPod,
)
from vcbus.contracts.events.podgroups import PodGroupCreated, PodGroupDeleted
from vcbus.contracts.keys import JobKey, NodeName
from vcbus.core.reasons import WILL_BIND_TIMEOUT
from vcbus.core.scheduling.cluster_view import ClusterView
from vcbus.core.scheduling.holds import WillBind, fold_will_bind

T0 = datetime(2026, 1, 1, tzinfo=UTC)
JOB = JobKey("ns/mpi")
M0 = ReservedPod(task="master", index=0, node=NodeName("n2"), requests={"cpu": 2000})
M1 = ReservedPod(task="master", index=1, node=NodeName("n3"), requests={"cpu": 2000})
P0 = ReservedPod(task="ps", index=0, node=NodeName("n1"), requests={"cpu": 1000})


def _reserved(*held: ReservedPod, uid: str = "u1", at: int = 0) -> CapacityReserved:
    return CapacityReserved(
        event_id=f"r-{uid}-{len(held)}-{at}",
        occurred_at=T0 + timedelta(seconds=at),
        job=JOB,
        podgroup="mpi",
        uid=uid,
        pods=held,
        held=held,
        expires_at=T0 + timedelta(minutes=10),
    )


def _released(*held: ReservedPod, reason: str = "StageBound", uid: str = "u1") -> CapacityReleased:
    return CapacityReleased(
        event_id=f"x-{uid}-{reason}-{len(held)}",
        occurred_at=T0 + timedelta(seconds=5),
        job=JOB,
        podgroup="mpi",
        uid=uid,
        pods=(M0,),
        held=held,
        reason=reason,
    )


def test_newest_event_replaces_what_is_held_when_a_job_gets_more_or_gives_back() -> None:
    first = fold_will_bind(None, _reserved(M0))
    more = fold_will_bind(first, _reserved(M0, M1, P0, at=3))
    less = fold_will_bind(more, _released(M1, P0))
    assert first is not None
    assert more is not None
    assert less is not None
    assert (first.pods, more.pods, less.pods) == ((M0,), (M0, M1, P0), (M1, P0))
    assert less.reserved_at == T0
    assert less.expires_at == T0 + timedelta(minutes=10)


def test_folding_an_event_twice_changes_nothing() -> None:
    once = fold_will_bind(fold_will_bind(None, _reserved(M0, M1)), _released(M1))
    twice = fold_will_bind(once, _released(M1))
    assert once == twice


def test_entry_is_removed_when_everything_is_released() -> None:
    assert fold_will_bind(fold_will_bind(None, _reserved(M0)), _released()) is None


def test_a_timed_out_marker_stays_when_the_reservation_times_out() -> None:
    held = fold_will_bind(None, _reserved(M0))
    marker = fold_will_bind(held, _released(reason=WILL_BIND_TIMEOUT))
    assert marker == WillBind(
        job=JOB,
        podgroup="mpi",
        uid="u1",
        reserved_at=T0,
        expires_at=T0 + timedelta(minutes=10),
        timed_out=True,
    )


def test_release_of_an_older_podgroup_is_ignored_when_a_newer_one_holds() -> None:
    newer = fold_will_bind(None, _reserved(M0, uid="u2"))
    assert fold_will_bind(newer, _released(reason="JobDeleted", uid="u1")) == newer


def test_reservation_of_a_new_podgroup_starts_afresh_when_an_old_one_timed_out() -> None:
    marker = fold_will_bind(None, _released(reason=WILL_BIND_TIMEOUT))
    fresh = fold_will_bind(marker, _reserved(M0, uid="u2", at=7))
    assert fresh is not None
    assert (fresh.uid, fresh.timed_out, fresh.reserved_at) == (
        "u2",
        False,
        T0 + timedelta(seconds=7),
    )


def test_view_keeps_a_reservation_until_released_when_its_podgroup_is_deleted() -> None:
    """The allocator publishes the release; until then sessions ignore it (no PodGroup)."""
    view = ClusterView()
    pg = build_podgroup("mpi", "ns", "default", 3, uid="u1").podgroup
    view.apply(PodGroupCreated(event_id="c", occurred_at=T0, podgroup=pg))
    view.apply(_reserved(M0))
    view.apply(PodGroupDeleted(event_id="d", occurred_at=T0, job=JOB, name="mpi"))
    assert view.snapshot().will_bind[JOB].pods == (M0,)
    view.apply(_released(reason="JobDeleted"))
    assert JOB not in view.snapshot().will_bind


def test_view_drops_a_timed_out_marker_when_its_podgroup_is_deleted() -> None:
    view = ClusterView()
    view.apply(_reserved(M0))
    view.apply(_released(reason=WILL_BIND_TIMEOUT))
    assert view.snapshot().will_bind[JOB].timed_out
    view.apply(PodGroupDeleted(event_id="d", occurred_at=T0, job=JOB, name="mpi"))
    assert JOB not in view.snapshot().will_bind


def test_view_copy_holds_the_same_reservations_when_built_from_a_snapshot() -> None:
    view = ClusterView()
    view.apply(_reserved(M0, M1))
    snapshot = view.snapshot()
    assert ClusterView.from_snapshot(snapshot).snapshot().will_bind == snapshot.will_bind


def test_scenario_document_gives_stages_and_reservations_when_it_has_them() -> None:
    view = ClusterView.from_scenario(
        {
            "podgroups": [
                {
                    "name": "mpi",
                    "namespace": "ns",
                    "dependent": True,
                    "stages": [{"name": "master", "replicas": 2, "requests": {"cpu": "2"}}],
                }
            ],
            "willBind": [
                {
                    "job": "ns/mpi",
                    "pods": [
                        {"task": "master", "index": 0, "node": "n2", "requests": {"cpu": "2"}}
                    ],
                    "expiresAt": "2026-01-01T00:10:00Z",
                }
            ],
        }
    )
    snapshot = view.snapshot()
    [stage] = snapshot.podgroups[JOB].podgroup.stages
    assert (stage.name, stage.replicas, stage.min_available, stage.requests) == (
        "master",
        2,
        2,
        {"cpu": 2000},
    )
    held = snapshot.will_bind[JOB]
    assert (held.uid, held.pods, held.expires_at) == ("ns-mpi", (M0,), T0 + timedelta(minutes=10))

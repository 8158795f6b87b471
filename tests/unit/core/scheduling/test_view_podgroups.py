"""A view's PodGroup states, made again only for the jobs that changed, are the states made anew.

``ClusterView.snapshot`` makes the ``PodGroupState`` of the jobs whose PodGroup, phase,
conditions or first sight changed since the last snapshot, and keeps the others. After
every event of a walk through PodGroup changes, the snapshot of a view that took a snapshot
after each event equals the snapshot of a view that folded the same events with none taken
before.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import msgspec

from tests.support.builders import build_podgroup
from vcbus.contracts import (
    PodGroupConditionsChanged,
    PodGroupCreated,
    PodGroupDeleted,
    PodGroupPhaseChanged,
    PodGroupUpdated,
)
from vcbus.contracts.keys import job_key
from vcbus.contracts.objects.meta import Condition
from vcbus.contracts.objects.podgroup import PodGroup, PodGroupPhase
from vcbus.core.scheduling import ClusterEvent
from vcbus.core.scheduling.cluster_view import CHANGE_LOG, ClusterView

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _group(name: str, uid: str = "") -> PodGroup:
    podgroup = build_podgroup(name, "ns", "default", 1, {"w": 1}).podgroup
    return msgspec.structs.replace(podgroup, uid=uid or f"uid-{name}")


def _walk() -> list[ClusterEvent]:
    at = [T0 + timedelta(seconds=i) for i in range(20)]
    held = Condition(type="Unschedulable", status="True", reason="NotEnoughResources")
    return [
        PodGroupCreated(event_id="c-b", occurred_at=at[0], podgroup=_group("b")),
        PodGroupCreated(event_id="c-d", occurred_at=at[1], podgroup=_group("d")),
        PodGroupCreated(event_id="c-a", occurred_at=at[2], podgroup=_group("a")),
        PodGroupPhaseChanged(
            event_id="p-a",
            occurred_at=at[3],
            job=job_key("ns", "a"),
            podgroup="a",
            phase=PodGroupPhase.INQUEUE,
            uid="uid-a",
        ),
        PodGroupConditionsChanged(
            event_id="k-b",
            occurred_at=at[4],
            job=job_key("ns", "b"),
            podgroup="b",
            conditions=(held,),
        ),
        PodGroupUpdated(event_id="u-b", occurred_at=at[5], podgroup=_group("b")),
        # a phase before its PodGroup, then the PodGroup
        PodGroupPhaseChanged(
            event_id="p-c",
            occurred_at=at[6],
            job=job_key("ns", "c"),
            podgroup="c",
            phase=PodGroupPhase.RUNNING,
            uid="uid-c",
        ),
        PodGroupCreated(event_id="c-c", occurred_at=at[7], podgroup=_group("c")),
        PodGroupDeleted(event_id="d-d", occurred_at=at[8], job=job_key("ns", "d"), name="d"),
        # a's restart: deleted, created again under a new uid
        PodGroupDeleted(event_id="d-a", occurred_at=at[9], job=job_key("ns", "a"), name="a"),
        PodGroupCreated(event_id="c-a2", occurred_at=at[10], podgroup=_group("a", "uid-a2")),
        PodGroupDeleted(event_id="d-x", occurred_at=at[11], job=job_key("ns", "x"), name="x"),
    ]


def test_each_snapshot_is_the_snapshot_of_a_view_made_anew() -> None:
    events = _walk()
    view = ClusterView()
    for number, event in enumerate(events):
        view.apply(event)
        fresh = ClusterView()
        for earlier in events[: number + 1]:
            fresh.apply(earlier)
        made, anew = view.snapshot().podgroups, fresh.snapshot().podgroups
        assert dict(made) == dict(anew), number


def test_a_job_that_did_not_change_keeps_its_state_object() -> None:
    view = ClusterView()
    for event in _walk()[:3]:
        view.apply(event)
    first = view.snapshot().podgroups
    view.apply(
        PodGroupPhaseChanged(
            event_id="p-a",
            occurred_at=T0,
            job=job_key("ns", "a"),
            podgroup="a",
            phase=PodGroupPhase.INQUEUE,
            uid="uid-a",
        )
    )
    second = view.snapshot().podgroups
    assert second[job_key("ns", "b")] is first[job_key("ns", "b")]
    assert second[job_key("ns", "a")].phase is PodGroupPhase.INQUEUE


def test_a_snapshot_names_the_jobs_changed_since_an_earlier_one() -> None:
    view = ClusterView()
    events = _walk()
    numbers = []
    for event in events[:4]:
        view.apply(event)
        changes = view.snapshot().job_changes()
        assert changes is not None
        numbers.append(changes.number)
    last = view.snapshot().job_changes()
    assert last is not None
    assert last.since(numbers[-1]) == frozenset()
    assert last.since(numbers[-2]) == frozenset({job_key("ns", "a")})  # its phase
    assert last.since(numbers[0]) == frozenset({job_key("ns", "d"), job_key("ns", "a")})
    assert last.since(numbers[-1] + 1) is None


def test_changes_older_than_the_log_are_unknown() -> None:
    view = ClusterView()
    view.apply(_walk()[0])
    first = view.snapshot().job_changes()
    assert first is not None
    for number in range(CHANGE_LOG + 1):
        view.apply(
            PodGroupPhaseChanged(
                event_id=f"p-{number}",
                occurred_at=T0,
                job=job_key("ns", "b"),
                podgroup="b",
                phase=PodGroupPhase.INQUEUE if number % 2 else PodGroupPhase.PENDING,
                uid="uid-b",
            )
        )
        view.snapshot()
    last = view.snapshot().job_changes()
    assert last is not None
    assert last.since(first.number + 1) == frozenset({job_key("ns", "b")})
    assert last.since(first.number) is None
    assert replace(view.snapshot(), pods={}).job_changes() is None  # not its own pods

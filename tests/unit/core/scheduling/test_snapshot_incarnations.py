"""A restarted job reuses its pods' names: the view keeps each incarnation's status apart.

The scheduling services read ``pods`` and ``pods.status`` as one table; across topics the
records of one pod arrive in any order. Keyed by name only, the old pod's late ``Failed``
became the new pod's phase (its PodGroup was marked Completed and the job never ran
again after ``RestartJob``), and the new pod's early ``Bound`` was erased by the old pod's
deletion (the allocator would have bound it a second time).
"""

from __future__ import annotations

from datetime import UTC, datetime

from vcbus.contracts import (
    BindingCreated,
    NodeName,
    PodCreated,
    PodDeleted,
    PodKey,
    PodPhaseChanged,
)
from vcbus.contracts.keys import JobKey
from vcbus.contracts.objects.pod import Pod, PodPhase
from vcbus.core.scheduling import ClusterEvent
from vcbus.core.scheduling.cluster_view import ClusterView

T0 = datetime(2026, 1, 1, tzinfo=UTC)
KEY = PodKey("ns/job-w-0")


def pod(uid: str) -> Pod:
    return Pod(
        name="job-w-0",
        namespace="ns",
        job=JobKey("ns/job"),
        task="w",
        index=0,
        podgroup="job",
        uid=uid,
    )


def created(uid: str) -> PodCreated:
    return PodCreated(event_id=f"c-{uid}", occurred_at=T0, pod=pod(uid))


def deleted(uid: str) -> PodDeleted:
    return PodDeleted(
        event_id=f"d-{uid}", occurred_at=T0, job=JobKey("ns/job"), pod=KEY, pod_uid=uid
    )


def phase(uid: str, what: PodPhase, node: str, reason: str = "") -> PodPhaseChanged:
    return PodPhaseChanged(
        event_id=f"p-{uid}-{what}",
        occurred_at=T0,
        pod=KEY,
        job=JobKey("ns/job"),
        task="w",
        node=NodeName(node),
        phase=what,
        reason=reason,
        pod_uid=uid,
    )


def folded(*events: ClusterEvent) -> ClusterView:
    """A view that folded ``events`` in this order."""
    view = ClusterView()
    for event in events:
        view.apply(event)
    return view


def test_the_old_pods_late_failure_is_not_the_new_pods_phase_when_a_job_restarts() -> None:
    view = folded(
        created("v0"),
        phase("v0", PodPhase.RUNNING, "n1"),
        deleted("v0"),
        created("v1"),
        phase("v0", PodPhase.FAILED, "n1"),  # read late, from pods.status
    )

    state = view.snapshot().pods[KEY]
    assert (state.pod.uid, state.phase, state.node) == ("v1", PodPhase.PENDING, None)


def test_the_new_pods_binding_survives_the_old_pods_deletion_when_read_before_it() -> None:
    view = folded(
        created("v0"),
        phase("v1", PodPhase.PENDING, "n2", reason="Bound"),  # pods.status read ahead
        deleted("v0"),
        created("v1"),
    )

    state = view.snapshot().pods[KEY]
    assert (state.pod.uid, state.phase, state.node) == ("v1", PodPhase.PENDING, "n2")


def test_a_binding_of_the_old_pod_does_not_count_for_the_new_one() -> None:
    view = folded(
        created("v0"),
        BindingCreated(event_id="b", occurred_at=T0, pod=pod("v0"), node=NodeName("n1")),
        deleted("v0"),
        created("v1"),
    )

    state = view.snapshot().pods[KEY]
    assert (state.binding, state.node) == (False, None)


def test_records_that_arrive_after_their_pods_deletion_leave_nothing_behind() -> None:
    """docs/design.md#bounded-records: a late status or binding of a deleted pod is not kept
    forever."""
    view = folded(
        created("v0"),
        phase("v0", PodPhase.RUNNING, "n1"),
        deleted("v0"),
        phase("v0", PodPhase.SUCCEEDED, "n1"),  # read late, from pods.status
        BindingCreated(event_id="b", occurred_at=T0, pod=pod("v0"), node=NodeName("n1")),
    )

    assert KEY not in view.snapshot().pods
    assert view.held_entries() == 0


def test_a_status_read_before_its_pod_is_still_kept() -> None:
    view = ClusterView()
    view.apply(phase("v2", PodPhase.RUNNING, "n1"))  # pods.status read ahead of pods
    assert view.held_entries() == 2  # its phase and when it started
    view.apply(created("v2"))

    state = view.snapshot().pods[KEY]
    assert (state.pod.uid, state.phase, state.node) == ("v2", PodPhase.RUNNING, "n1")

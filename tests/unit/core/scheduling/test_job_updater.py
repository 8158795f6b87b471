"""PodGroup status at session close: B3.8 phases and one A8-ranked reason condition."""

from __future__ import annotations

from tests.support.builders import build_node, build_pod, build_podgroup, build_queue
from tests.support.scheduling import NOW, plugin, tier
from vcbus.contracts.keys import JobKey
from vcbus.contracts.objects.meta import Condition
from vcbus.contracts.objects.pod import PodPhase
from vcbus.contracts.objects.podgroup import PodGroupPhase
from vcbus.core.reasons import REASON_RANK, reason_rank
from vcbus.core.scheduling.framework.job_updater import (
    SCHEDULED_CONDITIONS,
    pod_group_phase,
    settled,
)
from vcbus.core.scheduling.framework.results import PodGroupStatusUpdate
from vcbus.core.scheduling.framework.session import close_session, open_session
from vcbus.core.scheduling.plugins import PLUGIN_BUILDERS
from vcbus.core.scheduling.snapshot import ClusterSnapshot


def _unschedulable(reason: str) -> Condition:
    return Condition(type="Unschedulable", status="True", reason=reason, message=f"{reason}!")


def _status(
    *,
    conditions: tuple[Condition, ...] = (),
    status_conditions: tuple[Condition, ...] = (),
    dependent: bool = False,
    phase: PodGroupPhase = PodGroupPhase.INQUEUE,
    pod_phase: PodPhase = PodPhase.PENDING,
    min_member: int = 2,
) -> tuple[PodGroupStatusUpdate, ...]:
    snapshot = ClusterSnapshot.build(
        nodes=[build_node("n1", {"cpu": "4"})],
        queues=[build_queue("default")],
        podgroups=[
            build_podgroup(
                "job",
                "ns",
                "default",
                min_member,
                {"first": 1, "second": 1} if min_member > 1 else {"first": 1},
                phase,
                dependent=dependent,
                conditions=conditions,
                status_conditions=status_conditions,
            )
        ],
        pods=[
            build_pod(
                "ns",
                "job-first-0",
                "n1" if pod_phase is not PodPhase.PENDING else None,
                pod_phase,
                {"cpu": "1"},
                "job",
                task="first",
            )
        ],
    )
    ssn = open_session(snapshot, (tier(plugin("gang")),), builders=PLUGIN_BUILDERS, now=NOW)
    return close_session(ssn).status_updates


def test_reason_ranks_follow_spec_a8_when_compared() -> None:
    assert list(REASON_RANK) == sorted(REASON_RANK, key=reason_rank)
    assert reason_rank("QueueClosed") < reason_rank("ClusterOverused")
    assert reason_rank("NotEnoughTasks") == reason_rank("GangUnschedulable")


def test_gang_reason_wins_when_a_dependent_job_also_waits_for_a_stage() -> None:
    [update] = _status(conditions=(_unschedulable("GangUnschedulable"),), dependent=True)
    assert [c.reason for c in update.conditions] == ["GangUnschedulable"]


def test_dependency_reason_wins_when_the_allocator_waits_for_the_reservation() -> None:
    [update] = _status(conditions=(_unschedulable("WaitingForReservation"),), dependent=True)
    [condition] = update.conditions
    assert condition.reason == "WaitingForDependency"
    assert condition.message == "tasks second wait for their dependencies (dependsOn)"


def test_allocator_reason_is_mirrored_when_nothing_ranks_above_it() -> None:
    [update] = _status(conditions=(_unschedulable("WaitingForReservation"),))
    assert update.conditions == (_unschedulable("WaitingForReservation"),)
    assert update.phase is PodGroupPhase.INQUEUE


def test_nothing_is_reported_when_phase_and_reason_are_already_known() -> None:
    known = (_unschedulable("GangUnschedulable"),)
    assert _status(conditions=known, status_conditions=known) == ()


def test_reason_is_cleared_when_the_podgroup_completes() -> None:
    known = (_unschedulable("GangUnschedulable"),)
    [update] = _status(
        conditions=known,
        status_conditions=known,
        phase=PodGroupPhase.RUNNING,
        pod_phase=PodPhase.SUCCEEDED,
        min_member=1,
    )
    assert (update.phase, update.conditions) == (PodGroupPhase.COMPLETED, ())


def test_will_bind_timeout_wins_when_a_dependent_job_waits_for_its_next_stage() -> None:
    """The allocator's ``WillBind`` timeout condition ranks above WaitingForDependency."""
    timeout = Condition(
        type="WillBind", status="False", reason="WillBindTimeout", message="timed out"
    )
    [update] = _status(conditions=(timeout,), dependent=True)
    assert update.conditions == (
        Condition(
            type="Unschedulable", status="True", reason="WillBindTimeout", message="timed out"
        ),
    )


def test_running_dependent_job_stays_running_when_its_next_stage_pods_appear() -> None:
    """docs/design.md#dependent-jobs: admitted on the whole job's minResources, it is not sent back
    to Pending."""
    snapshot = ClusterSnapshot.build(
        nodes=[build_node("n1", {"cpu": "4"})],
        queues=[build_queue("default")],
        podgroups=[
            build_podgroup(
                "job",
                "ns",
                "default",
                2,
                {"first": 1, "second": 1},
                PodGroupPhase.RUNNING,
                dependent=True,
            )
        ],
        pods=[
            build_pod(
                "ns", "job-first-0", "n1", PodPhase.RUNNING, {"cpu": "1"}, "job", task="first"
            ),
            build_pod(
                "ns", "job-second-0", None, PodPhase.PENDING, {"cpu": "1"}, "job", task="second"
            ),
        ],
    )
    ssn = open_session(snapshot, (tier(plugin("gang")),), builders=PLUGIN_BUILDERS, now=NOW)
    assert close_session(ssn).status_updates == ()
    assert pod_group_phase(ssn.jobs[JobKey("ns/job")], unschedulable=False) is PodGroupPhase.RUNNING


def _settled(
    *,
    phase: PodGroupPhase = PodGroupPhase.RUNNING,
    conditions: tuple[Condition, ...] = SCHEDULED_CONDITIONS,
    status_conditions: tuple[Condition, ...] = (),
    dependent: bool = False,
    pod_phase: PodPhase = PodPhase.RUNNING,
) -> bool:
    """Whether the one job of a small cluster is settled."""
    state = build_podgroup(
        "job",
        "ns",
        "default",
        1,
        {"w": 1},
        phase,
        conditions=conditions,
        status_conditions=status_conditions,
        dependent=dependent,
    )
    snapshot = ClusterSnapshot.build(
        nodes=[build_node("n1", {"cpu": "4"})],
        queues=[build_queue("default")],
        podgroups=[state],
        pods=[build_pod("ns", "job-w-0", "n1", pod_phase, {"cpu": "1"}, "job", task="w")],
    )
    ssn = open_session(snapshot, (tier(plugin("gang")),), builders=PLUGIN_BUILDERS, now=NOW)
    return settled(ssn.jobs[JobKey("ns/job")], state)


def test_a_running_job_with_its_gang_ready_and_nothing_to_report_is_settled() -> None:
    assert _settled()
    assert not _settled(pod_phase=PodPhase.PENDING)  # a pod to place
    assert not _settled(pod_phase=PodPhase.SUCCEEDED)  # its phase may change at close
    assert not _settled(phase=PodGroupPhase.INQUEUE)
    assert not _settled(conditions=())  # the gang would give it its Scheduled condition
    assert not _settled(status_conditions=(_unschedulable("NotEnoughResources"),))
    assert not _settled(dependent=True)

"""``job_reason``: the one rule for why a job is where it is (docs/design.md#pending-reasons)."""

from __future__ import annotations

from vcbus.contracts.objects import Condition
from vcbus.core.views.reason import Reason, job_reason, reason_candidates


def unschedulable(reason: str, message: str = "") -> Condition:
    return Condition(type="Unschedulable", status="True", reason=reason, message=message)


def own(phase: str, reason: str, message: str = "") -> Condition:
    return Condition(type=phase, status="True", reason=reason, message=message)


def test_the_highest_ranked_candidate_wins_whatever_topic_it_came_from():
    why = job_reason(
        "Pending",
        job=(own("Pending", "PodGroupPending"),),
        podgroup_phase="Pending",
        podgroup=(unschedulable("ClusterOverused", "cpu"),),
        allocator=(unschedulable("QueueClosed", "closed"),),
    )
    assert why == Reason("QueueClosed", "closed", "podgroups.conditions")


def test_candidates_are_ranked_deduplicated_and_keep_their_order_on_ties():
    ranked = reason_candidates(
        podgroup=(unschedulable("NotEnoughTasks", "x"), unschedulable("Infeasible", "y")),
        allocator=(unschedulable("NotEnoughTasks", "x"), unschedulable("GangUnschedulable", "z")),
        job=(own("Pending", "WaitingForDependency", "w"), own("Pending", "Other", "o")),
    )
    assert [(r.code, r.source) for r in ranked] == [
        ("Infeasible", "podgroups.status"),
        ("NotEnoughTasks", "podgroups.status"),
        ("GangUnschedulable", "podgroups.conditions"),
        ("WaitingForDependency", "jobs.status"),
    ]


def test_a_finished_job_says_why_it_ended_not_a_stale_podgroup_reason():
    why = job_reason(
        "Completed",
        job=(own("Completed", "Completed", "all pods succeeded"),),
        podgroup_phase="Deleted",
        podgroup=(unschedulable("GangUnschedulable", "stale"),),
    )
    assert why == Reason("Completed", "all pods succeeded", "jobs.status")


def test_a_job_without_candidates_says_its_own_phase_condition():
    conditions = (own("Running", "PodsRunning", "2 running"), own("UpdateRejected", "Nope"))
    assert job_reason("Running", job=conditions) == Reason(
        "PodsRunning", "2 running", "jobs.status"
    )
    assert job_reason("Pending") is None


def test_a_podgroup_pending_condition_is_not_repeated_once_the_podgroup_is_enqueued():
    stale = (own("Pending", "PodGroupPending", "PodGroup a-pg is not enqueued yet"),)
    for phase in ("Inqueue", "Running"):
        why = job_reason("Pending", job=stale, podgroup_phase=phase)
        assert why is not None
        assert why.code == "PodsPending"
        assert "not enqueued" not in why.text()
        assert phase in why.message
    kept = job_reason("Pending", job=stale, podgroup_phase="Pending")
    assert kept == Reason("PodGroupPending", "PodGroup a-pg is not enqueued yet", "jobs.status")

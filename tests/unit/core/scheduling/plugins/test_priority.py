"""Priority: job order and the A3 task order (minimum pods first)."""

from __future__ import annotations

from datetime import timedelta

from tests.support.builders import build_pod, build_podgroup, build_queue
from tests.support.scheduling import DEFAULT_TIERS, NOW
from vcbus.contracts.keys import JobKey
from vcbus.contracts.objects.pod import PodPhase
from vcbus.core.scheduling.framework.session import Session, open_session
from vcbus.core.scheduling.plugins import PLUGIN_BUILDERS
from vcbus.core.scheduling.snapshot import ClusterSnapshot, PodState


def _session(pods: list[PodState], min_task: dict[str, int] | None = None) -> Session:
    return open_session(
        ClusterSnapshot.build(
            queues=[build_queue("default")],
            podgroups=[build_podgroup("job", "ns", "default", 1, min_task)],
            pods=pods,
        ),
        DEFAULT_TIERS,
        builders=PLUGIN_BUILDERS,
        now=NOW,
    )


def _order(ssn: Session) -> list[str]:
    job = ssn.jobs[JobKey("ns/job")]
    return [t.name for t in ssn.sort_tasks(list(job.tasks.values()))]


def test_tasks_order_by_index_then_creation_then_uid_when_priorities_tie() -> None:
    """A3 rules 3–5: smaller index, then older creation, then smaller uid."""
    pods = [
        build_pod("ns", "b", None, PodPhase.PENDING, {"cpu": "1"}, "job", index=1, uid="u1"),
        build_pod("ns", "a", None, PodPhase.PENDING, {"cpu": "1"}, "job", index=1, uid="u2"),
        build_pod(
            "ns",
            "c",
            None,
            PodPhase.PENDING,
            {"cpu": "1"},
            "job",
            index=1,
            uid="u0",
            creation=NOW + timedelta(seconds=1),
        ),
        build_pod("ns", "d", None, PodPhase.PENDING, {"cpu": "1"}, "job", index=0, uid="u9"),
    ]
    assert _order(_session(pods)) == ["d", "b", "a", "c"]


def test_pods_beyond_the_minimum_come_last_when_their_priority_is_higher() -> None:
    """docs/design.md#minimum-pods-first rule 1 wins over rule 2: master-3 (beyond its minimum of 3)
    after worker-0."""
    pods = [
        build_pod(
            "ns",
            "job-master-3",
            None,
            PodPhase.PENDING,
            {"cpu": "1"},
            "job",
            task="master",
            priority=100,
        ),
        build_pod(
            "ns",
            "job-worker-0",
            None,
            PodPhase.PENDING,
            {"cpu": "1"},
            "job",
            task="worker",
            priority=1,
        ),
        build_pod(
            "ns",
            "job-master-0",
            None,
            PodPhase.PENDING,
            {"cpu": "1"},
            "job",
            task="master",
            priority=100,
        ),
    ]
    order = _order(_session(pods, {"master": 3, "worker": 1}))
    assert order == ["job-master-0", "job-worker-0", "job-master-3"]


def test_job_goes_first_when_its_priority_is_higher() -> None:
    ssn = open_session(
        ClusterSnapshot.build(
            queues=[build_queue("default")],
            podgroups=[
                build_podgroup("low", "ns", "default", 0, priority=1),
                build_podgroup("high", "ns", "default", 0, priority=10),
            ],
        ),
        DEFAULT_TIERS,
        builders=PLUGIN_BUILDERS,
        now=NOW,
    )
    assert ssn.job_order_fn(ssn.jobs[JobKey("ns/high")], ssn.jobs[JobKey("ns/low")])
    assert not ssn.job_order_fn(ssn.jobs[JobKey("ns/low")], ssn.jobs[JobKey("ns/high")])

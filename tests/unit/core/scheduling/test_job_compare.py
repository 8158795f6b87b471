"""The session's job comparison orders jobs as its priority queue of them does."""

from __future__ import annotations

from datetime import timedelta
from functools import cmp_to_key

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.builders import build_node, build_pod, build_podgroup, build_queue
from tests.support.scheduling import DEFAULT_TIERS, NOW
from vcbus.contracts.objects.pod import PodPhase
from vcbus.core.scheduling.framework.priority_queue import PriorityQueue
from vcbus.core.scheduling.framework.session import open_session
from vcbus.core.scheduling.plugins import PLUGIN_BUILDERS
from vcbus.core.scheduling.snapshot import ClusterSnapshot, PodGroupState, PodState

_job = st.tuples(
    st.integers(0, 3),  # priority
    st.integers(0, 4),  # creation, seconds after NOW (ties decided by uid)
    st.integers(0, 3),  # running pods (ready when at its minimum of 2)
)


@settings(max_examples=60, deadline=None)
@given(st.lists(_job, min_size=1, max_size=12))
def test_sorting_by_job_compare_pops_as_the_priority_queue(
    jobs: list[tuple[int, int, int]],
) -> None:
    podgroups: list[PodGroupState] = []
    pods: list[PodState] = []
    for i, (priority, created, running) in enumerate(jobs):
        name = f"job-{i}"
        creation = NOW + timedelta(seconds=created)
        podgroups.append(
            build_podgroup(
                name, "ns", "default", 2, priority=priority, creation=creation, uid=f"u{i % 5}{i}"
            )
        )
        pods.extend(
            build_pod("ns", f"{name}-{k}", "n0", PodPhase.RUNNING, {"cpu": "1"}, name)
            for k in range(running)
        )
    snapshot = ClusterSnapshot.build(
        nodes=[build_node("n0", {"cpu": "64", "memory": "64Gi", "pods": "110"})],
        queues=[build_queue("default")],
        podgroups=podgroups,
        pods=pods,
    )
    ssn = open_session(snapshot, DEFAULT_TIERS, builders=PLUGIN_BUILDERS, now=NOW)
    queue = PriorityQueue(ssn.job_order_fn)
    for key in sorted(ssn.jobs):
        queue.push(ssn.jobs[key])
    popped = [queue.pop().key for _ in range(len(ssn.jobs))]
    by_compare = PriorityQueue(compare=ssn.job_compare)
    for key in sorted(ssn.jobs):
        by_compare.push(ssn.jobs[key])
    assert [by_compare.pop().key for _ in range(len(ssn.jobs))] == popped

    ordered = sorted(ssn.jobs.values(), key=cmp_to_key(ssn.job_compare))

    assert [job.key for job in ordered] == popped
    for left in ordered:
        for right in ordered:
            assert ssn.job_compare(left, right) == -ssn.job_compare(right, left)
            assert (ssn.job_compare(left, right) < 0) == ssn.job_order_fn(left, right)

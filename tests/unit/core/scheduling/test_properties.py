"""Properties of allocate over random clusters: capacity, gang all-or-nothing, determinism."""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.builders import build_node, build_pod, build_podgroup, build_queue
from vcbus.contracts.objects.pod import PodPhase
from vcbus.core.scheduling.framework.session import open_session
from vcbus.core.scheduling.plugins import PLUGIN_BUILDERS
from vcbus.core.scheduling.scheduler import default_conf, run_session
from vcbus.core.scheduling.snapshot import ClusterSnapshot, PodGroupState, PodState

NOW = datetime(2026, 1, 1, tzinfo=UTC)


@st.composite
def clusters(draw: st.DrawFn) -> ClusterSnapshot:
    nodes = [
        build_node(
            f"n{i}",
            {
                "cpu": str(draw(st.integers(1, 8))),
                "memory": f"{draw(st.integers(1, 16))}Gi",
                "pods": draw(st.integers(1, 10)),
            },
        )
        for i in range(draw(st.integers(1, 5)))
    ]
    podgroups: list[PodGroupState] = []
    pods: list[PodState] = []
    for j in range(draw(st.integers(1, 5))):
        size = draw(st.integers(1, 6))
        minimum = draw(st.integers(0, size))
        cpu = draw(st.sampled_from(["500m", "1", "2", "3"]))
        memory = draw(st.sampled_from(["512Mi", "1Gi", "4Gi"]))
        podgroups.append(
            build_podgroup(f"j{j}", "ns", "default", minimum, priority=draw(st.integers(0, 2)))
        )
        pods.extend(
            build_pod(
                "ns",
                f"j{j}-w-{i}",
                None,
                PodPhase.PENDING,
                {"cpu": cpu, "memory": memory},
                f"j{j}",
                task="w",
            )
            for i in range(size)
        )
    return ClusterSnapshot.build(
        nodes=nodes, queues=[build_queue("default")], podgroups=podgroups, pods=pods
    )


@settings(max_examples=60, deadline=None)
@given(clusters())
def test_bound_requests_never_exceed_allocatable_when_allocating_random_clusters(
    snapshot: ClusterSnapshot,
) -> None:
    result = run_session(snapshot, default_conf(), now=NOW)
    used: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    count: dict[str, int] = defaultdict(int)
    for decision in result.decisions:
        count[decision.node] += 1
        for name, amount in decision.pod.requests.items():
            used[decision.node][name] += amount
    for name, node in snapshot.nodes.items():
        for resource, amount in used[name].items():
            assert amount <= node.allocatable.get(resource, 0)
        assert count[name] <= node.allocatable["pods"]


@settings(max_examples=60, deadline=None)
@given(clusters())
def test_gang_commits_all_or_nothing_when_allocating_random_clusters(
    snapshot: ClusterSnapshot,
) -> None:
    result = run_session(snapshot, default_conf(), now=NOW)
    bound: dict[str, int] = defaultdict(int)
    for decision in result.decisions:
        bound[str(decision.job)] += 1
    for job, state in snapshot.podgroups.items():
        assert bound[str(job)] == 0 or bound[str(job)] >= state.podgroup.min_member


@settings(max_examples=30, deadline=None)
@given(clusters())
def test_decisions_are_identical_when_the_same_snapshot_runs_twice(
    snapshot: ClusterSnapshot,
) -> None:
    first = run_session(snapshot, default_conf(), now=NOW)
    second = run_session(snapshot, default_conf(), now=NOW)
    assert first == second


@settings(max_examples=40, deadline=None)
@given(clusters(), st.integers(0, 4))
def test_row_scores_equal_vectorised_scores_when_nodes_are_partly_used(
    snapshot: ClusterSnapshot, used: int
) -> None:
    """The plain-Python row scores the cache uses agree with the numpy ones, to the bit."""
    ssn = open_session(snapshot, default_conf().tiers, builders=PLUGIN_BUILDERS, now=NOW)
    rows = np.arange(len(ssn.matrix), dtype=np.intp)
    ssn.matrix.used[:, 0] += used * 250.0
    scorers = ssn.node_scorers()
    for job in ssn.jobs.values():
        for task in job.tasks.values():
            for scorer in scorers:
                assert scorer.row_fn is not None
                vector = scorer.fn(task, ssn.matrix, rows)
                for row in rows:
                    assert scorer.row_fn(task, ssn.matrix, int(row)) == vector[row]

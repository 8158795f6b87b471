"""Node choice: idle before future idle, ties to the smallest node name, refresh by row."""

from __future__ import annotations

import numpy as np

from tests.support.builders import build_node, build_pod, build_podgroup, build_queue
from tests.support.scheduling import DEFAULT_TIERS, NOW
from vcbus.contracts.keys import JobKey
from vcbus.contracts.objects.pod import PodPhase
from vcbus.core.scheduling.framework.extension_points import NodeFilter
from vcbus.core.scheduling.framework.session import open_session
from vcbus.core.scheduling.framework.statement import Statement
from vcbus.core.scheduling.model import TaskInfo
from vcbus.core.scheduling.node_matrix import BoolArray, IntArray, NodeMatrix
from vcbus.core.scheduling.plugins import PLUGIN_BUILDERS
from vcbus.core.scheduling.snapshot import ClusterSnapshot


def _snapshot(nodes: int, pods: int) -> ClusterSnapshot:
    return ClusterSnapshot.build(
        nodes=[
            build_node(f"n{i}", {"cpu": "4", "memory": "4Gi", "pods": 110})
            for i in reversed(range(nodes))
        ],
        queues=[build_queue("default")],
        podgroups=[build_podgroup("job", "ns", "default", 1)],
        pods=[
            build_pod(
                "ns", f"job-w-{i}", None, PodPhase.PENDING, {"cpu": "1", "memory": "1Gi"}, "job"
            )
            for i in range(pods)
        ],
    )


def test_node_name_that_sorts_first_wins_when_scores_tie() -> None:
    """docs/design.md#determinism: equal scores on n0..n4 → n0, whatever order the nodes came in."""
    ssn = open_session(_snapshot(5, 1), DEFAULT_TIERS, builders=PLUGIN_BUILDERS, now=NOW)
    placement = ssn.place(ssn.jobs[JobKey("ns/job")].tasks["ns-job-w-0"])
    assert placement.node is not None
    assert placement.node.name == "n0"
    assert not placement.pipelined


def test_cached_choice_follows_the_nodes_when_tasks_are_placed_and_discarded() -> None:
    """After each allocation the cache sees the node fill up; a discard gives room back."""
    ssn = open_session(_snapshot(2, 12), DEFAULT_TIERS, builders=PLUGIN_BUILDERS, now=NOW)
    job = ssn.jobs[JobKey("ns/job")]
    stmt = Statement(ssn)
    chosen = []
    for i in range(8):
        task = job.tasks[f"ns-job-w-{i}"]
        placement = ssn.place(task)
        assert placement.node is not None
        stmt.allocate(task, placement.node)
        chosen.append(placement.node.name)
    assert sorted(chosen) == ["n0"] * 4 + ["n1"] * 4
    ninth = ssn.place(job.tasks["ns-job-w-8"])
    assert ninth.node is None
    assert ninth.fit_errors is not None
    assert ninth.fit_errors.reasons == {"Insufficient cpu": 2}
    stmt.discard()
    again = ssn.place(job.tasks["ns-job-w-8"])
    assert again.node is not None
    assert again.node.name == "n0"


def _rejecting_n0_for(name: str, calls: list[str], *, cacheable: bool) -> NodeFilter:
    """A filter that reads the task's name: n0 refuses the task called ``name``."""

    def fn(task: TaskInfo, matrix: NodeMatrix, rows: IntArray) -> BoolArray:
        calls.append(task.name)
        return np.array([not (matrix.names[r] == "n0" and task.name == name) for r in rows])

    return NodeFilter("refused by name", fn, cacheable=cacheable)


def test_a_filter_that_does_not_declare_its_answer_cacheable_is_asked_per_task() -> None:
    """Two tasks of one signature: a filter reading more (the name) answers each one."""
    ssn = open_session(_snapshot(2, 2), DEFAULT_TIERS, builders=PLUGIN_BUILDERS, now=NOW)
    calls: list[str] = []
    ssn.add_node_filter_fn("predicates", _rejecting_n0_for("job-w-1", calls, cacheable=False))
    ssn.forget_placement()
    job = ssn.jobs[JobKey("ns/job")]
    first = ssn.place(job.tasks["ns-job-w-0"])
    second = ssn.place(job.tasks["ns-job-w-1"])
    assert first.node is not None
    assert first.node.name == "n0"
    assert second.node is not None
    assert second.node.name == "n1"
    assert calls == ["job-w-0", "job-w-1"]


def test_a_filter_that_declares_its_answer_cacheable_is_asked_once_per_signature() -> None:
    """Opted in, the filter's answer for the first task is the answer for its signature."""
    ssn = open_session(_snapshot(2, 2), DEFAULT_TIERS, builders=PLUGIN_BUILDERS, now=NOW)
    calls: list[str] = []
    ssn.add_node_filter_fn("predicates", _rejecting_n0_for("job-w-1", calls, cacheable=True))
    ssn.forget_placement()
    job = ssn.jobs[JobKey("ns/job")]
    ssn.place(job.tasks["ns-job-w-0"])
    second = ssn.place(job.tasks["ns-job-w-1"])
    assert second.node is not None
    assert second.node.name == "n0"
    assert calls == ["job-w-0"]


def test_every_built_in_node_filter_declares_its_answer_cacheable() -> None:
    """The built-in filters read only the placement signature: answers stay shared."""
    ssn = open_session(_snapshot(2, 1), DEFAULT_TIERS, builders=PLUGIN_BUILDERS, now=NOW)
    filters = ssn.node_filters()
    assert filters
    assert all(flt.cacheable for flt in filters)

"""Predicates: node selector, taints, cordoned nodes, pod count, locked nodes
(docs/design.md#reservation)."""

from __future__ import annotations

import pytest

from tests.support.builders import build_node, build_pod, build_podgroup, build_queue
from tests.support.scheduling import DEFAULT_TIERS, NOW
from vcbus.contracts.keys import JobKey
from vcbus.contracts.objects.node import Node, Taint
from vcbus.contracts.objects.pod import PodPhase, Toleration
from vcbus.core.scheduling.framework.session import Session, open_session
from vcbus.core.scheduling.holds import Reservation
from vcbus.core.scheduling.plugins import PLUGIN_BUILDERS
from vcbus.core.scheduling.snapshot import ClusterSnapshot, PodState
from vcbus.core.scheduling.taints import tolerates

PENDING = PodPhase.PENDING


def _session(
    nodes: list[Node], pods: list[PodState], reservation: Reservation | None = None
) -> Session:
    return open_session(
        ClusterSnapshot.build(
            nodes=nodes,
            queues=[build_queue("default")],
            podgroups=[build_podgroup("job", "ns", "default", 1)],
            pods=pods,
            reservation=reservation,
        ),
        DEFAULT_TIERS,
        builders=PLUGIN_BUILDERS,
        now=NOW,
    )


def _feasible(ssn: Session, pod: str) -> list[str]:
    task = ssn.jobs[JobKey("ns/job")].tasks[f"ns-{pod}"]
    return [n.name for n in ssn.placement.feasible_nodes(task)]


@pytest.mark.parametrize(
    ("toleration", "taint", "expected"),
    [
        (Toleration(key="k", value="v", effect="NoSchedule"), Taint(key="k", value="v"), True),
        (Toleration(key="k", value="x", effect="NoSchedule"), Taint(key="k", value="v"), False),
        (Toleration(key="k", operator="Exists"), Taint(key="k", value="v"), True),
        (Toleration(operator="Exists"), Taint(key="any", value="v", effect="NoExecute"), True),
        (Toleration(key="k", operator="Exists", effect="NoExecute"), Taint(key="k"), False),
    ],
)
def test_toleration_matches_when_kubernetes_rules_say_so(
    toleration: Toleration, taint: Taint, expected: bool
) -> None:
    assert tolerates(toleration, taint) is expected


def test_only_matching_nodes_are_feasible_when_pod_has_node_selector() -> None:
    ssn = _session(
        [
            build_node("a", {"cpu": "4"}, {"zone": "x"}),
            build_node("b", {"cpu": "4"}, {"zone": "y"}),
        ],
        [build_pod("ns", "p", None, PENDING, {"cpu": "1"}, "job", selector={"zone": "y"})],
    )
    assert _feasible(ssn, "p") == ["b"]


def test_tainted_node_is_skipped_when_the_taint_is_not_tolerated() -> None:
    nodes = [
        build_node("a", {"cpu": "4"}, taints=[Taint(key="gpu", value="true")]),
        build_node("b", {"cpu": "4"}, taints=[Taint(key="soft", effect="PreferNoSchedule")]),
    ]
    pods = [
        build_pod("ns", "plain", None, PENDING, {"cpu": "1"}, "job"),
        build_pod(
            "ns",
            "tolerant",
            None,
            PENDING,
            {"cpu": "1"},
            "job",
            tolerations=[Toleration(key="gpu", operator="Exists")],
        ),
    ]
    ssn = _session(nodes, pods)
    assert _feasible(ssn, "plain") == ["b"]
    assert _feasible(ssn, "tolerant") == ["a", "b"]


def test_node_is_skipped_when_cordoned() -> None:
    ssn = _session(
        [build_node("a", {"cpu": "4"}, unschedulable=True), build_node("b", {"cpu": "4"})],
        [build_pod("ns", "p", None, PENDING, {"cpu": "1"}, "job")],
    )
    assert _feasible(ssn, "p") == ["b"]


def test_full_node_is_skipped_when_pod_count_reaches_its_limit() -> None:
    ssn = _session(
        [build_node("a", {"cpu": "4", "pods": 1}), build_node("b", {"cpu": "4", "pods": 2})],
        [
            build_pod("ns", "running", "a", PodPhase.RUNNING, {"cpu": "1"}, "job"),
            build_pod("ns", "p", None, PENDING, {"cpu": "1"}, "job"),
        ],
    )
    assert _feasible(ssn, "p") == ["b"]
    node_a = ssn.nodes["a"]
    task = ssn.jobs[JobKey("ns/job")].tasks["ns-p"]
    status = ssn.predicate_fn(task, node_a)
    assert status is not None
    assert status.reason == "node(s) pod number exceeded"


def test_locked_node_is_feasible_only_when_the_job_is_the_target() -> None:
    """docs/design.md#reservation: a node locked for ns/job takes ns/job's pods and no one
    else's."""
    reservation = Reservation(target_job=JobKey("ns/other"), locked_nodes=frozenset({"a"}))
    ssn = _session(
        [build_node("a", {"cpu": "4"}), build_node("b", {"cpu": "4"})],
        [build_pod("ns", "p", None, PENDING, {"cpu": "1"}, "job")],
        reservation,
    )
    assert _feasible(ssn, "p") == ["b"]
    target = Reservation(target_job=JobKey("ns/job"), locked_nodes=frozenset({"a"}))
    ssn = _session(
        [build_node("a", {"cpu": "4"}), build_node("b", {"cpu": "4"})],
        [build_pod("ns", "p", None, PENDING, {"cpu": "1"}, "job")],
        target,
    )
    assert _feasible(ssn, "p") == ["a", "b"]


def test_one_node_predicate_agrees_when_compared_with_vectorised_filters() -> None:
    nodes = [
        build_node("a", {"cpu": "4"}, {"zone": "x"}),
        build_node("b", {"cpu": "4", "pods": 0}, {"zone": "y"}),
        build_node("c", {"cpu": "4"}, {"zone": "y"}, taints=[Taint(key="t")]),
        build_node("d", {"cpu": "4"}, {"zone": "y"}),
    ]
    ssn = _session(
        nodes, [build_pod("ns", "p", None, PENDING, {"cpu": "1"}, "job", selector={"zone": "y"})]
    )
    task = ssn.jobs[JobKey("ns/job")].tasks["ns-p"]
    one_by_one = [n.name for n in ssn.node_list if ssn.predicate_fn(task, n) is None]
    assert one_by_one == _feasible(ssn, "p") == ["d"]

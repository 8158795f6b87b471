"""Node order scores: least requested and balanced resource (Kubernetes formulas)."""

from __future__ import annotations

from tests.support.builders import build_node, build_pod, build_podgroup, build_queue
from tests.support.scheduling import NOW, go_plugin, tier
from vcbus.contracts.keys import JobKey
from vcbus.contracts.objects.pod import PodPhase
from vcbus.core.scheduling.framework.conf import Kind
from vcbus.core.scheduling.framework.session import open_session
from vcbus.core.scheduling.plugins import PLUGIN_BUILDERS
from vcbus.core.scheduling.snapshot import ClusterSnapshot


def test_scores_follow_kubernetes_formulas_when_nodes_are_empty_or_half_used() -> None:
    """Empty 4c/8Gi node, task 1c/2Gi: least (75+75)/2 = 75, balanced 100 → 175.

    Half-used node (2c/2Gi used): least ((25) + (50))/2 = 37, fractions .75/.5 →
    std .125 → balanced 87 → 124.
    """
    snapshot = ClusterSnapshot.build(
        nodes=[
            build_node("empty", {"cpu": "4", "memory": "8Gi"}),
            build_node("used", {"cpu": "4", "memory": "8Gi"}),
        ],
        queues=[build_queue("default")],
        podgroups=[build_podgroup("job", "ns", "default", 1)],
        pods=[
            build_pod("ns", "p", None, PodPhase.PENDING, {"cpu": "1", "memory": "2Gi"}, "job"),
            build_pod("ns", "r", "used", PodPhase.RUNNING, {"cpu": "2", "memory": "2Gi"}, "job"),
        ],
    )
    ssn = open_session(
        snapshot,
        (tier(go_plugin("nodeorder", Kind.NODE_ORDER)),),
        builders=PLUGIN_BUILDERS,
        now=NOW,
    )
    task = ssn.jobs[JobKey("ns/job")].tasks["ns-p"]
    assert ssn.node_order_fn(task, ssn.nodes["empty"]) == 175
    assert ssn.node_order_fn(task, ssn.nodes["used"]) == 124


def test_node_with_more_room_wins_when_least_requested_decides() -> None:
    snapshot = ClusterSnapshot.build(
        nodes=[
            build_node("big", {"cpu": "8", "memory": "8Gi"}),
            build_node("small", {"cpu": "2", "memory": "8Gi"}),
        ],
        queues=[build_queue("default")],
        podgroups=[build_podgroup("job", "ns", "default", 1)],
        pods=[build_pod("ns", "p", None, PodPhase.PENDING, {"cpu": "1", "memory": "1Gi"}, "job")],
    )
    ssn = open_session(
        snapshot,
        (tier(go_plugin("nodeorder", Kind.NODE_ORDER)),),
        builders=PLUGIN_BUILDERS,
        now=NOW,
    )
    placement = ssn.place(ssn.jobs[JobKey("ns/job")].tasks["ns-p"])
    assert placement.node is not None
    assert placement.node.name == "big"

"""Binpack scores: Volcano's binpack tests, ported."""

from __future__ import annotations

import math

import pytest

from tests.support.builders import build_node, build_pod, build_podgroup, build_queue
from tests.support.scheduling import NOW, go_plugin, tier
from vcbus.contracts.objects.pod import PodPhase
from vcbus.contracts.objects.podgroup import PodGroupPhase
from vcbus.core.scheduling.framework.conf import Arguments, Kind
from vcbus.core.scheduling.framework.session import open_session
from vcbus.core.scheduling.plugins import PLUGIN_BUILDERS
from vcbus.core.scheduling.plugins.binpack import weights
from vcbus.core.scheduling.snapshot import ClusterSnapshot

BINPACK_TEST = "volcano@00561f92 pkg/scheduler/plugins/binpack/binpack_test.go"
GPU, FOO = "nvidia.com/gpu", "example.com/foo"


def test_weights_match_volcano_when_arguments_are_given() -> None:
    """volcano binpack_test.go TestArguments: a negative resource weight becomes 1."""
    weight, resources = weights(
        {
            "binpack.weight": 10,
            "binpack.cpu": 5,
            "binpack.memory": 2,
            "binpack.resources": "nvidia.com/gpu, example.com/foo",
            "binpack.resources.nvidia.com/gpu": 7,
            "binpack.resources.example.com/foo": -3,
        }
    )
    assert weight == 10
    assert resources == {GPU: 7, FOO: 1, "cpu": 5, "memory": 2}


def _snapshot() -> ClusterSnapshot:
    pending = PodPhase.PENDING
    return ClusterSnapshot.build(
        nodes=[
            build_node("n1", {"cpu": "2", "memory": "4Gi"}),
            build_node("n2", {"cpu": "4", "memory": "16Gi", GPU: "4"}),
            build_node("n3", {"cpu": "2", "memory": "4Gi", FOO: "16"}),
        ],
        queues=[build_queue("c1")],
        podgroups=[build_podgroup("pg1", "c1", "c1", 0, phase=PodGroupPhase.RUNNING)],
        pods=[
            build_pod("c1", "p1", "n1", pending, {"cpu": "1", "memory": "1Gi"}, "pg1"),
            build_pod("c1", "p2", "n3", pending, {"cpu": "1.5", "memory": "0Gi"}, "pg1"),
            build_pod("c1", "p3", None, pending, {"cpu": "2", "memory": "10Gi", GPU: "2"}, "pg1"),
            build_pod("c1", "p4", None, pending, {"cpu": "3", "memory": "4Gi", FOO: "3"}, "pg1"),
        ],
    )


CASES: list[tuple[str, Arguments, dict[str, dict[str, float]]]] = [
    (
        "single job (weights 10, cpu 2, memory 3, gpu 7, foo 8)",
        {
            "binpack.weight": 10,
            "binpack.cpu": 2,
            "binpack.memory": 3,
            "binpack.resources": "nvidia.com/gpu, example.com/foo",
            "binpack.resources.nvidia.com/gpu": 7,
            "binpack.resources.example.com/foo": 8,
        },
        {
            "c1/p1": {"n1": 700, "n2": 137.5, "n3": 150},
            "c1/p2": {"n1": 0, "n2": 375, "n3": 0},
            "c1/p3": {"n1": 0, "n2": 531.25, "n3": 0},
            "c1/p4": {"n1": 0, "n2": 173.076923076, "n3": 346.153846153},
        },
    ),
    (
        "single job (weights 1, cpu 1, memory 1, gpu 23)",
        {
            "binpack.weight": 1,
            "binpack.cpu": 1,
            "binpack.memory": 1,
            "binpack.resources": "nvidia.com/gpu",
            "binpack.resources.nvidia.com/gpu": 23,
        },
        {
            "c1/p1": {"n1": 75, "n2": 15.625, "n3": 12.5},
            "c1/p2": {"n1": 0, "n2": 37.5, "n3": 0},
            "c1/p3": {"n1": 0, "n2": 50.5, "n3": 0},
            "c1/p4": {"n1": 0, "n2": 50, "n3": 50},
        },
    ),
]


@pytest.mark.parametrize(("name", "arguments", "expected"), CASES, ids=[c[0] for c in CASES])
def test_scores_match_volcano_when_porting_test_node(
    name: str, arguments: Arguments, expected: dict[str, dict[str, float]]
) -> None:
    """volcano binpack_test.go TestNode/single job (both cases)."""
    ssn = open_session(
        _snapshot(),
        (tier(go_plugin("binpack", Kind.NODE_ORDER, arguments=arguments)),),
        builders=PLUGIN_BUILDERS,
        now=NOW,
    )
    for job in ssn.jobs.values():
        for task in job.tasks.values():
            for node in ssn.node_list:
                score = ssn.node_order_fn(task, node)
                assert math.isclose(score, expected[str(task.key)][node.name], abs_tol=1e-8), (
                    name,
                    task.key,
                    node.name,
                )

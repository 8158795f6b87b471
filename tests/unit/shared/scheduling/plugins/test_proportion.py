"""Proportion: deserved shares by weight, capability and guarantee (B3.9)."""

from __future__ import annotations

import pytest

from contracts.objects.pod import PodPhase
from contracts.objects.queue import Queue
from shared.scheduling.framework.conf import Kind
from shared.scheduling.framework.session import open_session
from shared.scheduling.plugins import PLUGIN_BUILDERS
from shared.scheduling.plugins.proportion import ProportionPlugin
from shared.scheduling.snapshot import ClusterSnapshot, PodGroupState, PodState
from tests.support.builders import build_node, build_pod, build_podgroup, build_queue
from tests.support.scheduling import NOW, go_plugin, tier


def _deserved(queues: list[Queue], demand: dict[str, int]) -> dict[str, float]:
    pods: list[PodState] = []
    podgroups: list[PodGroupState] = []
    for queue, cpus in demand.items():
        podgroups.append(build_podgroup(f"pg-{queue}", "ns", queue, 1))
        pods.extend(
            build_pod("ns", f"{queue}-p-{i}", None, PodPhase.PENDING, {"cpu": "1"}, f"pg-{queue}")
            for i in range(cpus)
        )
    ssn = open_session(
        ClusterSnapshot.build(
            nodes=[build_node("n1", {"cpu": "12", "memory": "12Gi"})],
            queues=queues,
            podgroups=podgroups,
            pods=pods,
        ),
        (tier(go_plugin("proportion", Kind.QUEUE_ORDER)),),
        builders=PLUGIN_BUILDERS,
        now=NOW,
    )
    [(_, plugin)] = ssn.plugins
    assert isinstance(plugin, ProportionPlugin)
    return {name: attr.deserved.amount("cpu") for name, attr in plugin.queue_opts.items()}


def test_deserved_follows_weights_when_both_queues_want_more_than_the_cluster() -> None:
    deserved = _deserved([build_queue("a", 1), build_queue("b", 3)], {"a": 20, "b": 20})
    assert deserved == pytest.approx({"a": 3000, "b": 9000})


def test_unused_share_flows_to_the_other_queue_when_one_asks_less() -> None:
    deserved = _deserved([build_queue("a", 1), build_queue("b", 1)], {"a": 2, "b": 20})
    assert deserved == pytest.approx({"a": 2000, "b": 10000})


def test_deserved_share_is_capped_when_the_queue_has_a_capability() -> None:
    deserved = _deserved(
        [build_queue("a", 1, {"cpu": "4"}), build_queue("b", 1)], {"a": 20, "b": 20}
    )
    assert deserved == pytest.approx({"a": 4000, "b": 8000})


def test_deserved_share_is_raised_when_the_queue_has_a_guarantee() -> None:
    deserved = _deserved(
        [build_queue("a", 1, guarantee={"cpu": "8"}), build_queue("b", 1)], {"a": 1, "b": 20}
    )
    assert deserved["a"] == pytest.approx(8000)

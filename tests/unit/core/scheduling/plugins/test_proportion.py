"""Proportion: deserved shares by weight, capability and guarantee (Volcano's proportion.go)."""

from __future__ import annotations

import pytest

from tests.support.builders import build_node, build_pod, build_podgroup, build_queue
from tests.support.scheduling import NOW, go_plugin, tier
from vcbus.contracts.objects.pod import PodPhase
from vcbus.contracts.objects.podgroup import PodGroupPhase
from vcbus.contracts.objects.queue import Queue, QueueState
from vcbus.core.scheduling.framework.conf import Kind
from vcbus.core.scheduling.framework.session import open_session
from vcbus.core.scheduling.plugins import PLUGIN_BUILDERS
from vcbus.core.scheduling.plugins.proportion import ProportionPlugin
from vcbus.core.scheduling.snapshot import ClusterSnapshot, PodGroupState, PodState


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


def _deserved_with_pending(queues: list[Queue], pending_cpus: dict[str, str]) -> dict[str, float]:
    """Queue ``a`` runs 12 one-cpu pods; each queue in ``pending_cpus`` has a Pending job."""
    podgroups = [build_podgroup("pg-a", "ns", "a", 1, None, PodGroupPhase.RUNNING)]
    pods = [
        build_pod("ns", f"a-{i}", "n1", PodPhase.RUNNING, {"cpu": "1"}, "pg-a") for i in range(12)
    ]
    podgroups += [
        build_podgroup(
            f"pg-{q}", "ns", q, 1, None, PodGroupPhase.PENDING, min_resources={"cpu": cpus}
        )
        for q, cpus in pending_cpus.items()
    ]
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


def test_pending_jobs_claim_a_weighted_share_when_their_queue_has_no_pods_yet() -> None:
    """docs/design.md#queue-shares: a Pending job's minimum is demand, before the job has pods."""
    deserved = _deserved_with_pending([build_queue("a", 1), build_queue("b", 3)], {"b": "12"})
    assert deserved == pytest.approx({"a": 3000, "b": 9000})


def test_demand_that_can_never_be_admitted_leaves_the_cluster_to_the_others() -> None:
    """Work conserving: a job larger than the cluster, or in a closed queue, asks nothing."""
    queues = [
        build_queue("a", 1),
        build_queue("b", 3),
        build_queue("c", 3, state=QueueState.CLOSED),
    ]
    deserved = _deserved_with_pending(queues, {"b": "13", "c": "4"})
    assert deserved["a"] == pytest.approx(12000)

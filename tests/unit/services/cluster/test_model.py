"""The node model: what a pod takes from a node, and the node state's round trip."""

from __future__ import annotations

import msgspec

from contracts.objects.pod import ANNOTATION_RUN_SECONDS, PodPhase
from services.cluster.core import decide
from services.cluster.model import SimNode, demand, usage
from shared.step import Tick
from tests.unit.services.cluster.builders import (
    CONF,
    at,
    bind,
    build_ctx,
    build_pod,
    build_sim_node,
)


def test_demand_counts_one_pod_slot_when_the_requests_name_pods():
    assert demand({"cpu": 500, "pods": 3}) == {"cpu": 500, "pods": 1}


def test_usage_counts_only_active_pods_when_some_have_ended():
    pod = build_pod("a", cpu="1", memory="1Gi", annotations={ANNOTATION_RUN_SECONDS: "1"})
    state = bind(bind(build_sim_node(), pod), build_pod("b", cpu="2", memory="1Gi"))
    after = decide(state, Tick(at(1)), build_ctx(1), CONF).state
    assert after is not None

    assert [p.phase for p in after.pods] == [PodPhase.SUCCEEDED, PodPhase.RUNNING]
    assert usage(after.pods) == after.used == {"cpu": 2000, "memory": 2**30, "pods": 1}


def test_node_state_is_unchanged_when_it_goes_through_the_changelog_encoding():
    state = bind(build_sim_node(), build_pod(annotations={ANNOTATION_RUN_SECONDS: "2.5"}))
    running = decide(state, Tick(at(0)), build_ctx(), CONF).state

    decoded = msgspec.json.decode(msgspec.json.encode(running), type=SimNode)

    assert decoded == running
    assert decoded.pods[0].ends_at == at(2.5)

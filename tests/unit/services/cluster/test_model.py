"""The node model: what a pod takes from a node, and the node state's round trip."""

from __future__ import annotations

import msgspec

from tests.unit.services.cluster.builders import (
    CONF,
    at,
    bind,
    build_ctx,
    build_pod,
    build_sim_node,
)
from vcbus.contracts.objects.pod import ANNOTATION_RUN_SECONDS, ANNOTATION_START_SECONDS, PodPhase
from vcbus.core.step import Tick
from vcbus.services.cluster.core import decide
from vcbus.services.cluster.model import SimNode, demand, usage


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


OLD_RECORD = (
    '{"node":{"name":"n1","allocatable":{"cpu":4000,"memory":8589934592,"pods":110}},'
    '"generation":1,"removed":false,"seq":2,"pods":['
    '{"key":"default/a","uid":"uid-a","job":"default/j1","task":"worker",'
    '"requests":{"cpu":1000,"memory":1073741824},"seq":1,"phase":"Running",'
    '"bound_at":"2026-01-01T00:00:00Z","starts_at":"2026-01-01T00:00:00Z","run_seconds":2.5,'
    '"exit_code":0,"invalid":"","started_at":"2026-01-01T00:00:00Z","finished_at":null},'
    '{"key":"default/b","uid":"uid-b","job":"default/j1","task":"worker",'
    '"requests":{"cpu":500,"memory":1073741824},"seq":2,"phase":"Running",'
    '"bound_at":"2026-01-01T00:00:00.500000Z","starts_at":"2026-01-01T00:00:00.500000Z",'
    '"run_seconds":null,"exit_code":0,"invalid":"","started_at":"2026-01-01T00:00:00.500000Z",'
    '"finished_at":null}],"used":{"cpu":1500,"memory":2147483648,"pods":2}}'
)
"""A node state as the changelog held it before default fields were omitted."""


def test_node_state_decodes_when_the_changelog_record_lists_every_default():
    state = bind(build_sim_node(), build_pod("a", annotations={ANNOTATION_RUN_SECONDS: "2.5"}))
    state = bind(state, build_pod("b", cpu="500m", memory="1Gi"), seconds=0.5)
    running = decide(state, Tick(at(1)), build_ctx(1), CONF).state

    decoded = msgspec.json.decode(OLD_RECORD, type=SimNode)

    assert decoded == running
    assert decoded.due_at == at(2.5)
    assert len(msgspec.json.encode(running)) < len(OLD_RECORD)


def test_node_due_time_is_not_encoded_when_it_was_worked_out():
    state = bind(build_sim_node(), build_pod(annotations={ANNOTATION_START_SECONDS: "3"}))

    assert state.due_at == at(3)
    assert b"due" not in msgspec.json.encode(state)

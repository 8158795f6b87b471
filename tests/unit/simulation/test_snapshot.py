"""Snapshot scenarios (docs/design.md#scenarios): bindings, phases, conditions; deterministic
output."""

from __future__ import annotations

import json

import pytest
import yaml

from vcbus.contracts.keys import PodKey
from vcbus.contracts.objects.pod import PodPhase
from vcbus.core.scheduling.framework.conf import ConfError
from vcbus.core.scheduling.scenario_objects import ScenarioError
from vcbus.services.simulation.snapshot import run_snapshot_scenario, simulation_of

SCENARIO = """
config:
  actions: "allocate, backfill"
nodes:
  - {name: n1, allocatable: {cpu: "2", memory: 4Gi, pods: 110}, labels: {role: master}}
  - {name: n2, allocatable: {cpu: "2", memory: 4Gi, pods: 110}, labels: {role: worker}}
queues: [{name: c1, weight: 1, capability: {cpu: "4"}}]
podgroups:
  - {name: pg1, namespace: c1, queue: c1, minMember: 2, minTaskMember: {master: 1, worker: 1},
     minResources: {cpu: 2}, phase: Inqueue, priority: 0}
  - {name: pg2, namespace: c1, queue: c1, minMember: 2, phase: Inqueue}
pods:
  - {name: p0, namespace: c1, podgroup: pg1, task: master, requests: {cpu: "1", memory: 1Gi},
     phase: Pending, node: null, priority: 1, nodeSelector: {role: master},
     uid: c1-p0, creationTimestamp: "2026-01-01T00:00:00Z"}
  - {name: p1, namespace: c1, podgroup: pg1, task: worker, requests: {cpu: "1", memory: 1Gi},
     phase: Pending, nodeSelector: {role: worker}}
  - {name: q0, namespace: c1, podgroup: pg2, requests: {cpu: "4"}, phase: Pending}
  - {name: q1, namespace: c1, podgroup: pg2, requests: {cpu: "4"}, phase: Pending}
cycles: 2
"""


def test_scenario_reports_bindings_phases_and_conditions_when_run_for_two_cycles() -> None:
    out = run_snapshot_scenario(yaml.safe_load(SCENARIO))
    assert out["bindings"] == {"c1/p0": "n1", "c1/p1": "n2"}
    podgroups = out["podgroups"]
    assert isinstance(podgroups, dict)
    assert podgroups["c1/pg1"]["phase"] == "Running"
    assert podgroups["c1/pg1"]["conditions"][0]["reason"] == "Scheduled"
    assert podgroups["c1/pg2"]["phase"] == "Inqueue"
    assert podgroups["c1/pg2"]["conditions"][0]["reason"] == "QueueOverCapability"
    assert podgroups["c1/pg2"]["conditions"][0]["message"] == (
        "gang 0/2 ready; queue c1 would exceed its capability (cpu 4)"
    )
    assert out["targetJob"] is None
    assert out["lockedNodes"] == []


def test_snapshot_scenario_output_is_identical_when_run_twice() -> None:
    doc = yaml.safe_load(SCENARIO)
    first = json.dumps(run_snapshot_scenario(doc), sort_keys=True)
    second = json.dumps(run_snapshot_scenario(yaml.safe_load(SCENARIO)), sort_keys=True)
    assert first == second


def test_scenario_binds_nothing_when_the_only_fitting_node_is_locked() -> None:
    doc = yaml.safe_load(SCENARIO)
    doc["reservation"] = {"target": "c1/pg2", "locked": ["n2"]}
    out = run_snapshot_scenario(doc)
    assert out["bindings"] == {}
    assert out["targetJob"] == "c1/pg2"
    assert out["lockedNodes"] == ["n2"]


def test_scenario_fails_when_an_action_is_unknown() -> None:
    doc = yaml.safe_load(SCENARIO)
    doc["config"] = {"actions": "shuffle, allocate"}
    with pytest.raises(ConfError, match="unknown action 'shuffle'"):
        run_snapshot_scenario(doc)


def test_scenario_fails_when_a_pod_has_no_podgroup() -> None:
    with pytest.raises(ScenarioError, match="podgroup is required"):
        run_snapshot_scenario({"pods": [{"name": "p", "namespace": "ns"}]})


TIMED = """
config: {actions: "enqueue, allocate"}
step: 2
nodes: [{name: n1, allocatable: {cpu: "2", pods: 10}}]
podgroups:
  - {name: first, namespace: ns, minMember: 1, minResources: {cpu: "2"}, phase: Pending}
pods:
  - {name: first-w-0, namespace: ns, podgroup: first, requests: {cpu: "2"},
     annotations: {vcbus.io/run-seconds: "3", vcbus.io/exit-code: "1"}}
events:
  - at: 1
    add:
      podgroups: [{name: second, namespace: ns, minMember: 1, minResources: {cpu: "2"}}]
      pods: [{name: second-w-0, namespace: ns, podgroup: second, requests: {cpu: "2"}}]
cycles: 4
"""


def test_pod_finishes_after_its_run_seconds_when_cycles_advance_by_the_step() -> None:
    out = run_snapshot_scenario(yaml.safe_load(TIMED))
    timeline = out["timeline"]
    assert isinstance(timeline, list)
    assert [entry["time"] for entry in timeline] == [0.0, 2.0, 4.0, 6.0]
    assert timeline[0]["bindings"] == {"ns/first-w-0": "n1"}
    assert timeline[2]["finished"] == {"ns/first-w-0": "Failed"}
    assert timeline[2]["bindings"] == {"ns/second-w-0": "n1"}
    assert out["bindings"] == {"ns/first-w-0": "n1", "ns/second-w-0": "n1"}


def test_timeline_events_change_pods_podgroups_and_nodes_when_their_time_comes() -> None:
    doc = yaml.safe_load(TIMED)
    doc["events"] = [
        {"at": 0, "pod": "ns/first-w-0", "phase": "Running"},
        {"at": 1, "remove-node": "n1"},
        {"at": 1, "add-node": {"name": "n2", "allocatable": {"cpu": "4"}}},
        {"at": 3, "delete-podgroup": "ns/first"},
    ]
    simulation = simulation_of(doc)
    simulation.run_cycle()
    pods = simulation.view.snapshot().pods
    assert pods[PodKey("ns/first-w-0")].phase is PodPhase.RUNNING
    simulation.run_cycle()
    assert sorted(simulation.view.snapshot().nodes) == ["n2"]
    simulation.run_cycle()
    snapshot = simulation.view.snapshot()
    assert sorted(snapshot.podgroups) == []
    assert PodKey("ns/first-w-0") not in snapshot.pods


@pytest.mark.parametrize(
    ("events", "message"),
    [
        ([{"at": 1, "pod": "ns/p", "phase": "Dancing"}], "unknown pod phase"),
        ([{"at": 1, "explode": True}], "names none of"),
        ([{"at": "soon", "pod": "ns/p"}], "at must be a number"),
        ({"at": 1}, "must be a list"),
        ([{"at": 0, "add": ["x"]}], "add must be a mapping"),
    ],
)
def test_scenario_fails_with_a_message_when_an_event_is_malformed(
    events: object, message: str
) -> None:
    doc = yaml.safe_load(TIMED)
    doc["events"] = events
    with pytest.raises(ScenarioError, match=message):
        run_snapshot_scenario(doc)


def test_scenario_fails_when_the_step_is_negative() -> None:
    doc = yaml.safe_load(TIMED)
    doc["step"] = -1
    with pytest.raises(ScenarioError, match="step must be"):
        run_snapshot_scenario(doc)


PREEMPT_SCENARIO = """
config: {actions: "allocate, preempt"}
nodes:
  - {name: n1, allocatable: {cpu: "4", memory: 8Gi, pods: 110}}
queues: [{name: default, weight: 1}]
podgroups:
  - {name: low, namespace: default, queue: default, minMember: 1, phase: Running, priority: 10}
  - {name: high, namespace: default, queue: default, minMember: 1, phase: Inqueue, priority: 1000}
pods:
  - {name: low-w-0, namespace: default, podgroup: low, requests: {cpu: "3"}, phase: Running,
     node: n1}
  - {name: high-w-0, namespace: default, podgroup: high, requests: {cpu: "3"}, phase: Pending}
cycles: 2
"""


def test_snapshot_scenario_lists_evictions_and_holds_the_nomination_next_cycle() -> None:
    """The victim is Releasing in the next cycle, nobody binds on its room."""
    out = run_snapshot_scenario(yaml.safe_load(PREEMPT_SCENARIO))
    timeline = out["timeline"]
    assert isinstance(timeline, list)
    assert timeline[0]["evictions"] == {"default/low-w-0": "Preempted"}
    assert "evictions" not in timeline[1], "not evicted twice"
    assert out["bindings"] == {}

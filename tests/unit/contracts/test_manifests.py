"""Node, Queue and PriorityClass manifests: both shapes read alike, bad values named by path."""

from __future__ import annotations

import pytest

from vcbus.contracts.manifests import ManifestError, read_node, read_priority_class, read_queue
from vcbus.contracts.objects.node import Node, Taint
from vcbus.contracts.objects.queue import Queue, QueueState

GI = 2**30


def test_node_manifest_and_flat_node_read_to_the_same_node() -> None:
    manifest = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1", "labels": {"zone": "a", "rack": 7}},
        "spec": {"taints": [{"key": "gpu", "effect": "NoExecute"}], "unschedulable": True},
        "status": {"capacity": {"cpu": "4", "memory": "8Gi"}},
    }
    flat = {
        "name": "n1",
        "capacity": {"cpu": 4, "memory": "8Gi"},
        "labels": {"zone": "a", "rack": "7"},
        "taints": [{"key": "gpu", "effect": "NoExecute"}],
        "unschedulable": True,
    }
    expected = Node(
        name="n1",
        allocatable={"cpu": 4000, "memory": 8 * GI},
        labels={"rack": "7", "zone": "a"},
        taints=(Taint(key="gpu", effect="NoExecute"),),
        unschedulable=True,
    )
    assert read_node(manifest) == expected
    assert read_node(flat) == expected


def test_node_allocatable_is_preferred_to_capacity_when_both_are_given() -> None:
    node = read_node(
        {"metadata": {"name": "n"}, "status": {"allocatable": {"cpu": 1}, "capacity": {"cpu": 2}}}
    )
    assert node.allocatable == {"cpu": 1000}


@pytest.mark.parametrize(
    ("raw", "path", "reason"),
    [
        ("n1", "$", "expected a mapping, got str"),
        ({"metadata": {}}, "$.metadata.name", "a node needs a non-empty name"),
        ({"metadata": {"name": "n"}, "spec": []}, "$.spec", "expected a mapping, got list"),
        ({"name": "n", "taints": [{}]}, "$.taints[0]", "Object missing required field `key`"),
        (
            {"name": "n", "unschedulable": "yes"},
            "$.unschedulable",
            "expected true or false, got 'yes'",
        ),
        ({"name": "n", "allocatable": {"cpu": -1}}, "$.allocatable.cpu", "must not be negative"),
        ({"name": "n", "labels": {"a": True}}, "$.labels.a", "label values are text, got True"),
    ],
)
def test_bad_node_is_refused_with_the_json_path_of_the_value(
    raw: object, path: str, reason: str
) -> None:
    with pytest.raises(ManifestError) as caught:
        read_node(raw)
    assert caught.value.path == path
    assert reason in caught.value.reason


def test_error_message_puts_the_objects_place_in_front_when_asked() -> None:
    with pytest.raises(ManifestError) as caught:
        read_node({"name": "n", "taints": [{"value": "v"}]})
    assert str(caught.value) == "taints[0]: Object missing required field `key`"
    assert caught.value.at("nodes[3]") == "nodes[3].taints[0]: Object missing required field `key`"


def test_queue_manifest_and_flat_queue_read_to_the_same_queue() -> None:
    manifest = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": "q"},
        "spec": {
            "weight": 3,
            "capability": {"cpu": "8"},
            "guarantee": {"resource": {"cpu": "500m"}},
            "parent": "root",
            "priority": 2,
            "reclaimable": False,
        },
        "status": {"state": "Closed"},
    }
    flat = {
        "name": "q",
        "weight": 3,
        "capability": {"cpu": 8},
        "guarantee": {"cpu": "500m"},
        "parent": "root",
        "priority": 2,
        "reclaimable": False,
        "state": "Closed",
    }
    expected = Queue(
        name="q",
        weight=3,
        capability={"cpu": 8000},
        guarantee={"cpu": 500},
        state=QueueState.CLOSED,
        parent="root",
        priority=2,
        reclaimable=False,
    )
    assert read_queue(manifest) == expected
    assert read_queue(flat) == expected
    assert read_queue({"name": "plain"}) == Queue(name="plain")


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (
            {"kind": "Deployment", "apiVersion": "apps/v1"},
            "expected a scheduling.volcano.sh/v1beta1 Queue",
        ),
        ({"weight": 1}, "name: a queue needs a non-empty name"),
        ({"name": "q", "weight": "3"}, "weight: expected a whole number, got '3'"),
        ({"name": "q", "guarantee": {"cpu": "lots"}}, "guarantee: quantities must match"),
        ({"name": "q", "state": "Dancing"}, "state: Invalid enum value 'Dancing'"),
    ],
)
def test_bad_queue_is_refused_saying_where_and_why(raw: object, message: str) -> None:
    with pytest.raises(ManifestError, match=message):
        read_queue(raw)


def test_priority_class_reads_as_its_name_and_value() -> None:
    manifest = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "high"},
        "value": 1000,
    }
    assert read_priority_class(manifest) == ("high", 1000)
    with pytest.raises(ManifestError, match="value: a PriorityClass needs a whole-number value"):
        read_priority_class({"metadata": {"name": "high"}})
    with pytest.raises(ManifestError, match="value: expected a whole number, got '1'"):
        read_priority_class({"metadata": {"name": "high"}, "value": "1"})

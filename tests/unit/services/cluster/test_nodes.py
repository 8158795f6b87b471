"""Initial nodes of the simulated cluster, from options and from YAML or JSON text."""

from __future__ import annotations

import json

import pytest

from tests.unit.services.cluster.builders import CONF, T0, build_ctx
from vcbus.contracts.events.nodes import NodeRegistered
from vcbus.contracts.objects.node import Node, Taint
from vcbus.services.cluster.core import decide
from vcbus.services.cluster.nodes import (
    NodesError,
    add_commands,
    build_nodes,
    default_labels,
    load_nodes,
    parse_nodes,
)

GI = 2**30


def test_nodes_are_named_by_prefix_and_index_when_built_from_options():
    nodes = build_nodes(3, cpu="32", memory="256Gi", pods=64, labels={"zone": "a"}, prefix="w-")

    assert [node.name for node in nodes] == ["w-0", "w-1", "w-2"]
    assert {tuple(node.allocatable.items()) for node in nodes} == {
        (("cpu", 32_000), ("memory", 256 * GI), ("pods", 64))
    }
    assert [node.labels for node in nodes] == [
        {
            "kubernetes.io/arch": "amd64",
            "kubernetes.io/hostname": name,
            "kubernetes.io/os": "linux",
            "zone": "a",
        }
        for name in ("w-0", "w-1", "w-2")
    ]


def test_a_label_given_replaces_the_default_of_that_name():
    (node,) = build_nodes(1, labels={"kubernetes.io/arch": "arm64", "type": "kwok"})

    assert node.labels == {
        "kubernetes.io/arch": "arm64",
        "kubernetes.io/hostname": "node-0",
        "kubernetes.io/os": "linux",
        "type": "kwok",
    }


def test_nodes_have_the_defaults_and_extra_resources_when_only_some_options_are_given():
    (node,) = build_nodes(1, pods=None, extra={"nvidia.com/gpu": 4})

    assert node == Node(
        name="node-0",
        allocatable={"cpu": 8000, "memory": 32 * GI, "nvidia.com/gpu": 4000},
        labels=default_labels("node-0"),
    )


def test_no_nodes_are_built_when_the_count_is_zero():
    assert build_nodes(0) == ()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"count": -1}, "node count must be 0 or more, got -1"),
        ({"count": 1, "prefix": ""}, "node name prefix must not be empty"),
        ({"count": 1, "cpu": "lots"}, "node options: quantities must match"),
        ({"count": 1, "memory": "-1Gi"}, "node options.memory: allocatable must not be negative"),
    ],
)
def test_options_are_refused_with_a_reason_when_they_do_not_describe_nodes(kwargs, message):
    with pytest.raises(NodesError, match=message):
        build_nodes(**kwargs)


def test_nodes_are_read_with_their_quantities_when_the_file_is_a_yaml_list():
    text = """
- name: big
  allocatable: {cpu: "32", memory: 256Gi, pods: 110}
  labels: {zone: b, rack: 7}
  taints: [{key: gpu, effect: NoSchedule}]
- name: small
  allocatable: {cpu: 500m, memory: "1073741824"}
  unschedulable: true
"""
    big, small = load_nodes(text)

    assert big == Node(
        name="big",
        allocatable={"cpu": 32_000, "memory": 256 * GI, "pods": 110},
        labels={"rack": "7", "zone": "b"},
        taints=(Taint(key="gpu"),),
    )
    assert small == Node(name="small", allocatable={"cpu": 500, "memory": GI}, unschedulable=True)


def test_nodes_are_read_when_the_file_is_json():
    text = json.dumps([{"name": "n1", "allocatable": {"cpu": 4, "memory": "8Gi"}}])

    assert load_nodes(text) == (Node(name="n1", allocatable={"cpu": 4000, "memory": 8 * GI}),)


def test_nodes_are_read_from_the_nodes_key_when_the_file_is_a_scenario():
    text = """
config: {actions: "allocate"}
nodes:
  - {name: n1, allocatable: {cpu: "4", memory: 8Gi}, labels: {zone: a}}
"""
    (node,) = load_nodes(text)

    assert (node.name, node.labels) == ("n1", {"zone": "a"})


def test_nodes_are_read_from_manifests_when_the_file_is_a_kubernetes_node_list():
    text = """
apiVersion: v1
kind: List
items:
  - apiVersion: v1
    kind: Node
    metadata: {name: k1, labels: {kubernetes.io/hostname: k1}}
    spec:
      unschedulable: true
      taints: [{key: dedicated, value: infra, effect: NoExecute}]
    status:
      capacity: {cpu: "16", memory: 64Gi, pods: "110"}
      allocatable: {cpu: 15500m, memory: 62Gi, pods: "110"}
  - kind: Node
    metadata: {name: k2}
    status: {capacity: {cpu: "2"}}
"""
    k1, k2 = load_nodes(text)

    assert k1 == Node(
        name="k1",
        allocatable={"cpu": 15_500, "memory": 62 * GI, "pods": 110},
        labels={"kubernetes.io/hostname": "k1"},
        taints=(Taint(key="dedicated", value="infra", effect="NoExecute"),),
        unschedulable=True,
    )
    assert k2 == Node(name="k2", allocatable={"cpu": 2000})


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"name": "n1"}, "nodes: expected a list of nodes, got dict"),
        (["n1"], r"nodes\[0\]: expected a mapping, got str"),
        ([{"allocatable": {"cpu": 1}}], r"nodes\[0\].name: a node needs a non-empty name"),
        ([{"name": "n1", "allocatable": {"cpu": "x"}}], r"nodes\[0\].allocatable: quantities"),
        ([{"name": "n1", "allocatable": {"cpu": True}}], r"nodes\[0\].allocatable.cpu: expected a"),
        ([{"name": "n1", "allocatable": {"cpu": -2}}], "allocatable must not be negative"),
        ([{"name": "n1", "allocatable": ["cpu"]}], r"nodes\[0\].allocatable: expected a mapping"),
        ([{"name": "n1", "labels": {"a": None}}], r"nodes\[0\].labels.a: label values are text"),
        (
            [{"name": "n1", "taints": [{"value": "v"}]}],
            r"nodes\[0\].taints\[0\]: Object missing required field `key`",
        ),
        ([{"name": "n1", "unschedulable": "yes"}], r"nodes\[0\].unschedulable: expected true"),
        ([{"name": "n1"}, {"name": "n1"}], r"nodes\[1\].name: node 'n1' is listed twice"),
        ({"items": [{"metadata": {}}]}, r"items\[0\].metadata.name: a node needs"),
    ],
)
def test_nodes_are_refused_naming_the_bad_path_when_a_value_is_wrong(data, message):
    with pytest.raises(NodesError, match=message):
        parse_nodes(data)


def test_nodes_are_refused_when_the_text_is_not_yaml():
    with pytest.raises(NodesError, match="nodes file is not YAML or JSON"):
        load_nodes("- name: [unclosed")


def test_add_commands_register_the_nodes_with_stable_ids_when_fed_to_the_core():
    nodes = build_nodes(2)

    commands = add_commands(nodes, T0)
    again = add_commands(nodes, T0)
    changed = add_commands(build_nodes(2, cpu="4"), T0)

    assert [c.event_id for c in commands] == [c.event_id for c in again]
    assert len({c.event_id for c in (*commands, *changed)}) == 4
    registered = [decide(None, c, build_ctx(), CONF).emit for c in commands]
    assert [
        event.node.name
        for emit in registered
        for event in emit
        if isinstance(event, NodeRegistered)
    ] == ["node-0", "node-1"]

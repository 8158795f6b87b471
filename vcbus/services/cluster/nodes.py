"""The simulated cluster's initial nodes, built from options or read from YAML or JSON text.

A nodes text is a list of nodes, or a mapping with a ``nodes`` list (a scenario file), or a
Kubernetes ``List``/``NodeList`` with ``items``. Each node is either the flat vcbus shape
``{name, allocatable, labels, taints, unschedulable}`` or a Kubernetes Node manifest
(``metadata.name``, ``metadata.labels``, ``spec.taints``, ``spec.unschedulable``,
``status.allocatable`` falling back to ``status.capacity``). Quantities are written as
Kubernetes writes them (``"32"``, ``"500m"``, ``"256Gi"``, ``110``). Each node is read by
:func:`vcbus.contracts.manifests.read_node`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime

import msgspec
import yaml

from vcbus.contracts._base import derive_event_id, tag_of
from vcbus.contracts.events.cluster_commands import NodeAddRequested
from vcbus.contracts.manifests import ManifestError, read_node
from vcbus.contracts.objects.node import Node
from vcbus.contracts.quantity import CPU, MEMORY, PODS, QuantityError, Resources, parse_resources

DEFAULT_PREFIX = "node-"
DEFAULT_CPU = "8"
DEFAULT_MEMORY = "32Gi"
DEFAULT_PODS = 110
OS_LABEL = "kubernetes.io/os"
ARCH_LABEL = "kubernetes.io/arch"
HOSTNAME_LABEL = "kubernetes.io/hostname"


def default_labels(name: str) -> dict[str, str]:
    """The labels the kubelet (and KWOK) puts on every node: os, arch and host name."""
    return {ARCH_LABEL: "amd64", HOSTNAME_LABEL: name, OS_LABEL: "linux"}


class NodesError(ValueError):
    """Options or a nodes text that do not describe nodes; the message says where and why."""


def build_nodes(
    count: int,
    *,
    cpu: str | int | float = DEFAULT_CPU,
    memory: str | int = DEFAULT_MEMORY,
    pods: int | None = DEFAULT_PODS,
    extra: Mapping[str, str | int | float] | None = None,
    labels: Mapping[str, str] | None = None,
    prefix: str = DEFAULT_PREFIX,
) -> tuple[Node, ...]:
    """Build ``count`` nodes named ``<prefix>0`` … ``<prefix><count-1>``, alike but for their name.

    Each carries :func:`default_labels` (so ``nodeSelector: {kubernetes.io/os: linux}``
    fits, as on a real or KWOK cluster), and ``labels``.

    Args:
        count: how many nodes (0 or more).
        cpu: each node's allocatable cpu, as a quantity.
        memory: each node's allocatable memory, as a quantity.
        pods: each node's pod slots; None for no ``pods`` limit.
        extra: further allocatable resources (``{"nvidia.com/gpu": 4}``).
        labels: labels of every node, besides (or replacing) :func:`default_labels`.
        prefix: the start of every node name.

    Returns:
        The nodes, in name order of their index.

    Raises:
        NodesError: on a negative count, an empty prefix or a bad quantity.
    """
    if count < 0:
        msg = f"node count must be 0 or more, got {count}"
        raise NodesError(msg)
    if not prefix:
        msg = "node name prefix must not be empty"
        raise NodesError(msg)
    quantities: dict[str, str | int | float] = {CPU: cpu, MEMORY: memory, **(extra or {})}
    if pods is not None:
        quantities[PODS] = pods
    allocatable = _allocatable(quantities, "node options")
    given = _labels(dict(labels or {}), "node options.labels")
    return tuple(
        Node(
            name=f"{prefix}{index}",
            allocatable=dict(allocatable),
            labels={**default_labels(f"{prefix}{index}"), **given},
        )
        for index in range(count)
    )


def load_nodes(text: str) -> tuple[Node, ...]:
    """Read nodes from YAML or JSON text (see the module docstring for the shapes).

    Args:
        text: the content of a nodes file.

    Returns:
        The nodes, in the order written.

    Raises:
        NodesError: when the text is not YAML or does not describe nodes.
    """
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        msg = f"nodes file is not YAML or JSON: {exc}"
        raise NodesError(msg) from exc
    return parse_nodes(data)


def parse_nodes(data: object) -> tuple[Node, ...]:
    """Read nodes from decoded YAML or JSON (see the module docstring for the shapes).

    Args:
        data: a list of nodes, or a mapping holding one under ``nodes`` or ``items``.

    Returns:
        The nodes, in the order given.

    Raises:
        NodesError: naming the path of the first bad value, or a repeated node name.
    """
    items: object = data
    where = "nodes"
    if isinstance(data, Mapping):
        if "nodes" in data:
            items = data["nodes"]
        elif "items" in data:
            items, where = data["items"], "items"
    if not isinstance(items, list):
        msg = f"{where}: expected a list of nodes, got {type(items).__name__}"
        raise NodesError(msg)
    nodes = tuple(_node(item, f"{where}[{index}]") for index, item in enumerate(items))
    seen: set[str] = set()
    for index, node in enumerate(nodes):
        if node.name in seen:
            msg = f"{where}[{index}].name: node {node.name!r} is listed twice"
            raise NodesError(msg)
        seen.add(node.name)
    return nodes


def add_commands(nodes: Iterable[Node], at: datetime) -> tuple[NodeAddRequested, ...]:
    """Return the commands that add ``nodes`` to the cluster, with content-derived ids.

    Args:
        nodes: the nodes to add.
        at: the time the commands are issued.

    Returns:
        One ``NodeAddRequested`` per node, in the order given; the same node gives the
        same id, so re-adding after a restart is dropped as a duplicate.
    """
    kind = tag_of(NodeAddRequested)
    return tuple(
        NodeAddRequested(
            event_id=derive_event_id(kind, node.name, msgspec.json.encode(node).decode()),
            occurred_at=at,
            node=node,
        )
        for node in nodes
    )


def _node(item: object, where: str) -> Node:
    try:
        return read_node(item)
    except ManifestError as exc:
        raise NodesError(exc.at(where)) from None


def _allocatable(values: Mapping[str, object], where: str) -> Resources:
    quantities: dict[str, str | int | float] = {}
    for name, value in values.items():
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            msg = f"{where}.{name}: expected a quantity such as 32, 500m or 256Gi, got {value!r}"
            raise NodesError(msg)
        quantities[str(name)] = value
    try:
        parsed = parse_resources(quantities)
    except QuantityError as exc:
        msg = f"{where}: {exc}"
        raise NodesError(msg) from exc
    for name, amount in parsed.items():
        if amount < 0:
            msg = f"{where}.{name}: allocatable must not be negative, got {quantities[name]!r}"
            raise NodesError(msg)
    return parsed


def _labels(values: Mapping[str, object], where: str) -> dict[str, str]:
    labels: dict[str, str] = {}
    for key in sorted(values, key=str):
        value = values[key]
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            msg = f"{where}.{key}: label values are text, got {value!r}"
            raise NodesError(msg)
        labels[str(key)] = str(value)
    return labels

"""The simulated cluster's initial nodes, built from options or read from YAML or JSON text.

A nodes text is a list of nodes, or a mapping with a ``nodes`` list (a scenario file), or a
Kubernetes ``List``/``NodeList`` with ``items``. Each node is either the flat vcbus shape
``{name, allocatable, labels, taints, unschedulable}`` or a Kubernetes Node manifest
(``metadata.name``, ``metadata.labels``, ``spec.taints``, ``spec.unschedulable``,
``status.allocatable`` falling back to ``status.capacity``). Quantities are written as
Kubernetes writes them (``"32"``, ``"500m"``, ``"256Gi"``, ``110``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime

import msgspec
import yaml

from contracts._base import derive_event_id, tag_of
from contracts.events.cluster_commands import NodeAddRequested
from contracts.objects.node import Node, Taint
from contracts.quantity import CPU, MEMORY, PODS, QuantityError, Resources, parse_resources

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
    if not isinstance(item, Mapping):
        msg = f"{where}: expected a mapping, got {type(item).__name__}"
        raise NodesError(msg)
    if "metadata" in item:
        metadata = _mapping(item.get("metadata"), f"{where}.metadata")
        spec = _mapping(item.get("spec"), f"{where}.spec")
        status = _mapping(item.get("status"), f"{where}.status")
        name = metadata.get("name")
        labels, labels_at = metadata.get("labels"), f"{where}.metadata.labels"
        taints, taints_at = spec.get("taints"), f"{where}.spec.taints"
        unschedulable, unschedulable_at = spec.get("unschedulable"), f"{where}.spec.unschedulable"
        resources, resources_at = _resources_field(status, f"{where}.status")
        name_at = f"{where}.metadata.name"
    else:
        name, name_at = item.get("name"), f"{where}.name"
        labels, labels_at = item.get("labels"), f"{where}.labels"
        taints, taints_at = item.get("taints"), f"{where}.taints"
        unschedulable, unschedulable_at = item.get("unschedulable"), f"{where}.unschedulable"
        resources, resources_at = _resources_field(item, where)
    if not isinstance(name, str) or not name:
        msg = f"{name_at}: a node needs a non-empty name"
        raise NodesError(msg)
    if unschedulable is not None and not isinstance(unschedulable, bool):
        msg = f"{unschedulable_at}: expected true or false, got {unschedulable!r}"
        raise NodesError(msg)
    return Node(
        name=name,
        allocatable=_allocatable(_mapping(resources, resources_at), resources_at),
        labels=_labels(_mapping(labels, labels_at), labels_at),
        taints=_taints(taints, taints_at),
        unschedulable=bool(unschedulable),
    )


def _resources_field(holder: Mapping[str, object], where: str) -> tuple[object, str]:
    for field in ("allocatable", "capacity"):
        if field in holder:
            return holder[field], f"{where}.{field}"
    return None, f"{where}.allocatable"


def _mapping(value: object, where: str) -> Mapping[str, object]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        msg = f"{where}: expected a mapping, got {type(value).__name__}"
        raise NodesError(msg)
    return value


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


def _taints(value: object, where: str) -> tuple[Taint, ...]:
    if value is None:
        return ()
    try:
        return msgspec.convert(value, tuple[Taint, ...])
    except msgspec.ValidationError as exc:
        msg = f"{where}: {exc}"
        raise NodesError(msg) from exc

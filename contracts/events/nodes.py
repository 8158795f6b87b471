"""``nodes``: nodes registered, changed and removed, keyed by node name."""

from __future__ import annotations

from contracts._base import Event
from contracts.keys import NodeName
from contracts.objects.node import Node


class NodeRegistered(Event, tag="node.registered.v1", frozen=True, kw_only=True):
    """A node joined the cluster."""

    node: Node


class NodeChanged(Event, tag="node.changed.v1", frozen=True, kw_only=True):
    """A node's allocatable, labels, taints or cordon changed."""

    node: Node


class NodeRemoved(Event, tag="node.removed.v1", frozen=True, kw_only=True):
    """A node left the cluster."""

    name: NodeName


NodesEvent = NodeRegistered | NodeChanged | NodeRemoved

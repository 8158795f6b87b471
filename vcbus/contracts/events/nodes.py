"""``nodes``: nodes registered, changed and removed, keyed by node name."""

from __future__ import annotations

from datetime import datetime

from vcbus.contracts._base import Event
from vcbus.contracts.keys import NodeName
from vcbus.contracts.objects.node import Node


class NodeRegistered(Event, tag="node.registered.v1", frozen=True, kw_only=True):
    """A node joined the cluster."""

    node: Node


class NodeChanged(Event, tag="node.changed.v1", frozen=True, kw_only=True):
    """A node's allocatable, labels, taints or cordon changed."""

    node: Node


class NodeRemoved(Event, tag="node.removed.v1", frozen=True, kw_only=True):
    """A node left the cluster."""

    name: NodeName


class NodeHeartbeat(Event, tag="node.heartbeat.v1", frozen=True, kw_only=True):
    """A real node's agent is alive (docs/design.md#real-nodes), sent every ``interval_seconds``.

    A node whose heartbeats stop is NotReady after a grace period and takes no new
    bindings; past a second limit its pods end ``Failed`` with reason ``NodeLost``.
    Simulated nodes send none and are always Ready.

    It carries the whole node, as a kubelet's node status update did before leases:
    ``nodes`` is compacted by node name, so its newest record for a real node, a
    heartbeat, must still say what the node is.
    """

    name: NodeName
    node: Node
    """The node as its agent registers it (``node.name`` is ``name``)."""
    at: datetime
    interval_seconds: float = 10.0
    limits_enforced: bool = True
    """False where the agent runs pods without cgroup cpu and memory limits."""


NodesEvent = NodeRegistered | NodeChanged | NodeRemoved | NodeHeartbeat

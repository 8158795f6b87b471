"""Commands to the simulated cluster: add, cordon, uncordon and remove nodes; set a pod's phase.

Node commands are keyed by node name, like ``nodes`` and ``bindings``; a pod command is
routed by the cluster to the node that holds the pod. These types are not on a topic of
docs/design.md#topics: ``vcbus simulate`` and ``vcbus up`` hand them to the cluster directly.
"""

from __future__ import annotations

from vcbus.contracts._base import Event
from vcbus.contracts.keys import NodeName, PodKey
from vcbus.contracts.objects.node import Node
from vcbus.contracts.objects.pod import PodPhase


class NodeAddRequested(Event, tag="node.add_requested.v1", frozen=True, kw_only=True):
    """Add a node, or change it when it exists (allocatable, labels, taints, cordon)."""

    node: Node


class NodeCordonRequested(Event, tag="node.cordon_requested.v1", frozen=True, kw_only=True):
    """Mark a node unschedulable: it refuses new bindings, its pods keep running."""

    name: NodeName


class NodeUncordonRequested(Event, tag="node.uncordon_requested.v1", frozen=True, kw_only=True):
    """Mark a cordoned node schedulable again."""

    name: NodeName


class NodeRemoveRequested(Event, tag="node.remove_requested.v1", frozen=True, kw_only=True):
    """Remove a node; the pods still active on it fail with reason ``NodeLost``."""

    name: NodeName


class PodPhaseSetRequested(Event, tag="pod.phase_set_requested.v1", frozen=True, kw_only=True):
    """Move a bound pod to ``Running``, ``Succeeded`` or ``Failed`` now (a scenario event).

    ``exit_code`` defaults to 0 for ``Succeeded`` and 1 for ``Failed``.
    """

    pod: PodKey
    phase: PodPhase
    exit_code: int | None = None
    reason: str = ""
    message: str = ""


NodeCommand = NodeAddRequested | NodeCordonRequested | NodeUncordonRequested | NodeRemoveRequested
"""The commands on ``cluster.commands``, keyed by node name."""

ClusterCommand = (
    NodeAddRequested
    | NodeCordonRequested
    | NodeUncordonRequested
    | NodeRemoveRequested
    | PodPhaseSetRequested
)

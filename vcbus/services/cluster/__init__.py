"""The simulated cluster (like KWOK): reads bindings and pods; writes pods.status and nodes.

The pure API: :func:`decide` per node, :func:`next_deadline` for the shell's ticks,
:func:`locate_pods` to route pod inputs, and the node builders of
:mod:`vcbus.services.cluster.nodes`.
"""

from vcbus.services.cluster.core import (
    ClusterConf,
    ClusterInput,
    decide,
    locate_pods,
    next_deadline,
)
from vcbus.services.cluster.model import SimNode, SimPod
from vcbus.services.cluster.nodes import (
    NodesError,
    add_commands,
    build_nodes,
    load_nodes,
    parse_nodes,
)

__all__ = [
    "ClusterConf",
    "ClusterInput",
    "NodesError",
    "SimNode",
    "SimPod",
    "add_commands",
    "build_nodes",
    "decide",
    "load_nodes",
    "locate_pods",
    "next_deadline",
    "parse_nodes",
]

"""Wiring of the simulated cluster: bindings and node commands in; pods.status and nodes out.

State is per node (``nodes`` changelog), keyed like ``bindings``. Deleted pods arrive on
``pods``, which is keyed by job: every replica follows that topic whole and applies a
deletion to the node holding the pod, if that node is one of its own.

A binding of a pod that another node of this replica still runs (Pending or Running) is
refused with ``AlreadyBound``, as one to a node that holds it under another uid is: a pod
runs on one node at a time. A node holding only the pod's ended incarnation does not stop
it (the ended pod holds no capacity and leaves with its deletion).
"""

from __future__ import annotations

from collections.abc import Sequence

import structlog

from vcbus.contracts import BindingCreated, Event, PodDeleted, PodKey, Topic
from vcbus.contracts.keys import NodeName, pod_key
from vcbus.contracts.objects import Node
from vcbus.core.bus.partitioner import partition_for
from vcbus.core.bus.records import Record
from vcbus.core.bus.router import Route
from vcbus.core.runtime.clock import Clock
from vcbus.core.runtime.reactor import Entry, Reactor, Resync
from vcbus.core.runtime.service import Runtime, Service
from vcbus.core.runtime.settings import Settings
from vcbus.core.runtime.table import Table
from vcbus.core.state.changelog import ChangelogStore
from vcbus.core.step import Ctx, Step

from .core import ClusterConf, ClusterInput, decide, next_deadline
from .model import SimNode
from .nodes import add_commands

NAME = "cluster"

log = structlog.get_logger("vcbus.cluster")


class _PodIndex:
    """Which node holds each pod, for the nodes this replica owns."""

    def __init__(self) -> None:
        self.nodes: dict[PodKey, NodeName] = {}

    def update(self, name: str, before: SimNode | None, after: SimNode | None) -> None:
        """Forget the pods ``before`` held that ``after`` does not; map ``after``'s to it."""
        held = after.pods if after is not None else ()
        if before is not None and before.pods is not held:
            kept = {pod.key for pod in held}
            for pod in before.pods:
                if pod.key not in kept:
                    self.nodes.pop(pod.key, None)
        node = NodeName(name)
        for pod in held:
            self.nodes[pod.key] = node


def build_service(
    settings: Settings, clock: Clock, *, nodes: Sequence[Node] = (), conf: ClusterConf | None = None
) -> Service:
    """The cluster: registers ``nodes`` at start (idempotently) and runs their pods."""
    conf = conf or ClusterConf()
    store = ChangelogStore[Entry[SimNode]]("nodes", Entry[SimNode])
    index = _PodIndex()

    def runs_elsewhere(event: ClusterInput) -> NodeName | None:
        """The other node of this replica running the pod a binding is for, if any."""
        if not isinstance(event, BindingCreated):
            return None
        key = pod_key(event.pod.namespace, event.pod.name)
        holder = index.nodes.get(key)
        if holder is None or holder == event.node:
            return None
        entry = store.get(partition_for(holder.encode(), settings.partitions), holder)
        held = entry.state.find(key) if entry is not None and entry.state is not None else None
        return holder if held is not None and held.is_active else None

    def core(state: SimNode | None, event: ClusterInput, ctx: Ctx) -> Step[SimNode | None]:
        step = decide(state, event, ctx, conf, bound_elsewhere=runs_elsewhere(event))
        known = state or step.state
        if known is not None:
            index.update(known.name, state, step.state)
        return step

    reactor = Reactor[SimNode, ClusterInput](
        core,
        store,
        clock,
        next_deadline=next_deadline,
        resync=Resync(settings.resync_seconds),
    )

    def restored() -> None:
        index.nodes.clear()
        for _, name, entry in store.items():
            index.update(name, None, entry.state)
        reactor.rebuild_timers()

    def on_pods(event: Event, record: Record) -> None:
        if not isinstance(event, PodDeleted):
            return
        node = index.nodes.get(event.pod)
        if node is None:
            return
        partition = partition_for(node.encode(), settings.partitions)
        if store.get(partition, node) is None:
            return
        emitted = reactor.apply(partition, node, event, event.event_id)
        if emitted:
            log.warning("pod_deletion_emitted_events", pod=event.pod, count=len(emitted))

    async def register_nodes(runtime: Runtime) -> None:
        await runtime.ready.wait()
        await runtime.publish(add_commands(nodes, clock.now()))

    handle = reactor.handle
    return Service(
        name=NAME,
        routes=[
            Route(Topic.BINDINGS, handle, "cluster.bind"),
            Route(Topic.CLUSTER_COMMANDS, handle, "cluster.command"),
        ],
        stores=[store],
        timers=[reactor],
        tables=[Table("pods", [Topic.PODS], on_pods, only=[PodDeleted])],
        tasks=[register_nodes] if nodes else [],
        on_restored=restored,
    )

"""``vcbus describe node NAME``: one node, as ``kubectl describe node`` shows one.

Its status (Ready or NotReady, cordoned), its heartbeat (a real node's age and interval,
whether its agent enforces limits), labels, taints, what it offers and holds, the lock on
it and its pods; and a pod's node as a job's description shows it (what is amiss with it).
"""

from __future__ import annotations

from datetime import datetime

from vcbus.contracts import Topic
from vcbus.core.bus.protocol import Bus
from vcbus.core.node_lifecycle import Readiness
from vcbus.core.runtime.settings import Settings
from vcbus.core.views.read_model import POD_TOPICS
from vcbus.core.views.units import show_resources
from vcbus.services.cli.describe_layout import field as _field
from vcbus.services.cli.describe_layout import table as _table
from vcbus.services.cli.status_store import StatusStore, read_store
from vcbus.services.cli.usage import node_of, used_by_node

NODE_TOPICS = (Topic.NODES, *POD_TOPICS, Topic.RESERVATIONS)
"""What ``describe node`` reads, whole."""

NODE_KINDS = ("node", "nodes", "no")


def node_cell(store: StatusStore, node: str | None) -> str:
    """A pod's node, with what is amiss with it: NotReady, limits not enforced."""
    if not node:
        return "-"
    health = store.node_health(node)
    notes = [
        note
        for note in (
            str(health.readiness) if health.readiness is Readiness.NOT_READY else "-",
            health.limits_text(),
        )
        if note != "-"
    ]
    return f"{node} ({', '.join(notes)})" if notes else node


def describe_node(store: StatusStore, name: str) -> str | None:
    """The description of node ``name`` as text (``None`` when it is not registered).

    Its status (Ready or NotReady, cordoned), its heartbeat (a real node's age, interval,
    whether its agent enforces limits; ``<none>`` for a simulated node), labels, taints,
    what it offers and holds, the lock on it, and its pods.
    """
    node = node_of(store, name)
    if node is None:
        return None
    health = store.node_health(name)
    beat = health.heartbeat
    lines = [
        _field("Name", name),
        _field("Status", health.status(unschedulable=node.unschedulable)),
    ]
    if beat is None:
        lines.append(_field("Heartbeat", "<none> (simulated node: always Ready)"))
    else:
        lines.append(
            _field(
                "Heartbeat",
                f"{health.heartbeat_text()} ({beat.at.isoformat()}; every "
                f"{beat.interval_seconds:g}s; NotReady {store.lifecycle.grace_seconds:g}s "
                f"after the last)",
            )
        )
        enforced = "enforced" if beat.limits_enforced else "not enforced (no cgroups)"
        lines.append(_field("Limits", enforced))
    labels = ", ".join(f"{k}={v}" for k, v in sorted(node.labels.items()))
    lines.append(_field("Labels", labels or "<none>"))
    taints = ", ".join(f"{t.key}={t.value}:{t.effect}" for t in node.taints)
    lines.append(_field("Taints", taints or "<none>"))
    lines.append(_field("Allocatable", show_resources(node.allocatable) or "-"))
    lines.append(_field("Allocated", show_resources(used_by_node(store).get(name, {}))))
    locked = store.reservation.locks.get(name, "")
    lines.append(_field("Locked For", locked or "<none>"))
    rows = [
        (pod_key, pod.job, pod.task, pod.phase)
        for pod_key, pod in sorted(store.pods.items())
        if pod.node == name
    ]
    if rows:
        lines += ["Pod List:", *_table(("POD", "JOB", "TASK", "PHASE"), rows)]
    return "\n".join(lines) + "\n"


async def describe_node_on(
    bus: Bus, settings: Settings, name: str, *, verbose: int = 0, now: datetime | None = None
) -> str | None:
    """Read the nodes and the pods' placements, and describe node ``name`` (``None``: unknown).

    Args:
        bus: the bus to read.
        settings: the topic prefix and partitions.
        name: the node's name.
        verbose: at 1 and more, say how many records were skipped.
        now: the time the heartbeat's age is counted to (the clock's when not given).
    """
    store = await read_store(
        bus,
        settings,
        NODE_TOPICS,
        verbose=verbose,
        now=(lambda: now) if now is not None else None,
    )
    return describe_node(store, name)

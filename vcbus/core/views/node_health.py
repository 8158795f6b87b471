"""A node's health as readers show it: Ready or NotReady, the heartbeat's age, limits.

Real nodes send ``NodeHeartbeat`` (docs/design.md#real-nodes); the rule of
:mod:`vcbus.core.node_lifecycle` says when one is NotReady, counted to the reader's clock with the
reader's limits (``VCBUS_NODE_MONITOR_GRACE_SECONDS``, read as the allocator reads it:
:func:`vcbus.core.node_lifecycle.reader_conf`; every reader passes it). Simulated nodes have
no heartbeat and are Ready. ``get nodes``, ``describe node``, the dashboard
and ``vcbus up`` show these words.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from vcbus.contracts.events.nodes import NodeHeartbeat
from vcbus.core.node_lifecycle import NodeLifecycleConf, Readiness, heartbeat_age, readiness
from vcbus.core.views.age import human_duration

SCHEDULING_DISABLED = "SchedulingDisabled"
LIMITS_NOT_ENFORCED = "limits not enforced"


@dataclass(frozen=True, slots=True)
class NodeHealth:
    """What is known of a node's liveness at one moment."""

    readiness: Readiness
    heartbeat: NodeHeartbeat | None = None
    """The newest heartbeat; ``None`` for a simulated node."""
    age_seconds: float | None = None
    """Seconds since that heartbeat."""

    @property
    def real(self) -> bool:
        """Whether the node is a real one (it has sent a heartbeat)."""
        return self.heartbeat is not None

    def status(self, *, unschedulable: bool) -> str:
        """The STATUS kubectl shows: ``Ready``/``NotReady``, ``SchedulingDisabled`` if cordoned.

        A cordoned simulated node shows ``SchedulingDisabled`` alone, as before real nodes.
        """
        if not self.real:
            return SCHEDULING_DISABLED if unschedulable else str(self.readiness)
        return f"{self.readiness},{SCHEDULING_DISABLED}" if unschedulable else str(self.readiness)

    def heartbeat_text(self) -> str:
        """``12s ago``, or ``-`` for a simulated node."""
        if self.age_seconds is None:
            return "-"
        return f"{human_duration(self.age_seconds)} ago"

    def limits_column(self) -> str:
        """``get nodes -o wide``'s LIMITS: ``enforced``, ``not enforced`` (``-``: simulated)."""
        beat = self.heartbeat
        if beat is None:
            return "-"
        return "enforced" if beat.limits_enforced else "not enforced"

    def limits_text(self) -> str:
        """``limits not enforced`` where the agent runs pods without cgroups, else ``-``."""
        beat = self.heartbeat
        return LIMITS_NOT_ENFORCED if beat is not None and not beat.limits_enforced else "-"


def node_health(
    heartbeat: NodeHeartbeat | None, now: datetime, conf: NodeLifecycleConf
) -> NodeHealth:
    """Return a node's health at ``now`` from its newest heartbeat (``None``: simulated).

    ``conf``: the reader's limits (:func:`vcbus.core.node_lifecycle.reader_conf`).
    """
    if heartbeat is None:
        return NodeHealth(readiness=Readiness.READY)
    return NodeHealth(
        readiness=readiness(heartbeat.at, now, conf),
        heartbeat=heartbeat,
        age_seconds=heartbeat_age(heartbeat.at, now),
    )

"""When a real node is NotReady, and when its pods are lost: the rule, pure.

Port of the timing of Kubernetes' node lifecycle controller
(``pkg/controller/nodelifecycle/node_lifecycle_controller.go``, ``tryUpdateNodeHealth``
and ``processNoTaintBaseEviction``): a node whose last heartbeat is older than the grace
period (``--node-monitor-grace-period``, 40 s) is NotReady; once it has been NotReady for
the eviction timeout (``--pod-eviction-timeout``, 5 min) its pods are evicted. Volcano's
scheduler skips a node that is not Ready (``NodeInfo.Ready``).

A node that never sent a ``NodeHeartbeat`` is simulated and always Ready. A node that
heartbeats again is Ready again. Times are the heartbeat's ``at`` (the agent's clock)
against the deciding service's clock, so hosts keep their clocks in step (NTP); a drift
well under the grace period changes nothing (Kubernetes reads its own clock instead).

Used by the allocator (which decides) and by the read model (which shows it); imports
nothing but the standard library.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

NODE_MONITOR_GRACE_SECONDS = 40.0
"""Kubernetes' ``--node-monitor-grace-period`` default."""
POD_EVICTION_TIMEOUT_SECONDS = 300.0
"""Kubernetes' ``--pod-eviction-timeout`` default."""
ENV_GRACE = "VCBUS_NODE_MONITOR_GRACE_SECONDS"
ENV_EVICTION = "VCBUS_POD_EVICTION_TIMEOUT_SECONDS"


class Readiness(enum.StrEnum):
    """A node's ``Ready`` condition as vcbus shows it."""

    READY = "Ready"
    NOT_READY = "NotReady"


@dataclass(frozen=True, slots=True)
class NodeLifecycleConf:
    """How long a real node may be silent.

    Attributes:
        grace_seconds: after the last heartbeat, until the node is NotReady.
        eviction_seconds: after the node became NotReady, until its pods are lost.
    """

    grace_seconds: float = NODE_MONITOR_GRACE_SECONDS
    eviction_seconds: float = POD_EVICTION_TIMEOUT_SECONDS

    def __post_init__(self) -> None:
        """Refuse limits that are not positive numbers of seconds, saying which."""
        for field, variable in (("grace_seconds", ENV_GRACE), ("eviction_seconds", ENV_EVICTION)):
            value = getattr(self, field)
            if not math.isfinite(value) or value <= 0:
                msg = f"{variable} must be a number of seconds > 0, got {value!r}"
                raise ValueError(msg)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> NodeLifecycleConf:
        """Read ``VCBUS_NODE_MONITOR_GRACE_SECONDS`` and ``VCBUS_POD_EVICTION_TIMEOUT_SECONDS``.

        Raises:
            ValueError: when a value is not a positive number.
        """
        values = {}
        for field, variable in (("grace_seconds", ENV_GRACE), ("eviction_seconds", ENV_EVICTION)):
            raw = env.get(variable)
            if raw is None:
                continue
            try:
                values[field] = float(raw)
            except ValueError:
                msg = f"{variable} must be a number of seconds > 0, got {raw!r}"
                raise ValueError(msg) from None
        return cls(**values)

    def not_ready_at(self, heartbeat_at: datetime) -> datetime:
        """When a node whose last heartbeat is ``heartbeat_at`` becomes NotReady."""
        return heartbeat_at + timedelta(seconds=self.grace_seconds)

    def lost_at(self, heartbeat_at: datetime) -> datetime:
        """When the pods of a node whose last heartbeat is ``heartbeat_at`` are lost."""
        return heartbeat_at + timedelta(seconds=self.grace_seconds + self.eviction_seconds)


def reader_conf(env: Mapping[str, str]) -> NodeLifecycleConf:
    """The limits a reader counts NotReady with: the allocator's own variables.

    Every reader (``get``, ``describe``, the dashboard, ``vcbus up``) reads them from its
    environment, as the allocator reads them from its settings, so a reader given the
    allocator's environment shows what the allocator decides; a value the allocator would
    refuse falls back to Kubernetes' defaults here (a reader never stops on it).
    """
    try:
        return NodeLifecycleConf.from_env(env)
    except ValueError:
        return NodeLifecycleConf()


def readiness(heartbeat_at: datetime | None, now: datetime, conf: NodeLifecycleConf) -> Readiness:
    """Return whether a node is Ready at ``now``.

    Args:
        heartbeat_at: its last heartbeat's time; ``None`` for a node that never sent one
            (simulated: always Ready).
        now: the time of the decision.
        conf: the limits.
    """
    if heartbeat_at is None or _utc(now) < _utc(conf.not_ready_at(heartbeat_at)):
        return Readiness.READY
    return Readiness.NOT_READY


def is_lost(heartbeat_at: datetime | None, now: datetime, conf: NodeLifecycleConf) -> bool:
    """Return whether a node's pods are lost at ``now`` (grace and eviction timeout over)."""
    return heartbeat_at is not None and _utc(now) >= _utc(conf.lost_at(heartbeat_at))


def heartbeat_age(heartbeat_at: datetime, now: datetime) -> float:
    """Seconds since the heartbeat (0 when it is from the future: clocks drift)."""
    return max((_utc(now) - _utc(heartbeat_at)).total_seconds(), 0.0)


def _utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment

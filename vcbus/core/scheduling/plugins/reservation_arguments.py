"""The ``reservation`` plugin's arguments, read and checked (``plugins.reservation``).

The arguments and their defaults are described in ``plugins.reservation``'s docstring
(``lock-mode``, ``lock-nodes``, ``lock-interval``, ``lock-timeout``, ``lock-max``,
``lock-backoff``, ``target-min-waiting``, ``target-min-resources.<resource>``).
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field
from datetime import timedelta

from vcbus.contracts.quantity import QuantityError, parse_resources
from vcbus.core.scheduling.framework.arguments import get_duration, get_str
from vcbus.core.scheduling.framework.conf import Arguments
from vcbus.core.scheduling.framework.reservation_changes import (
    DEFAULT_LOCK_BACKOFF,
    DEFAULT_LOCK_MAX,
    ReservationLimits,
    seconds_text,
)
from vcbus.core.scheduling.resource import Resource

__all__ = [
    "DEFAULT_LOCK_INTERVAL",
    "DEFAULT_LOCK_NODES",
    "LOCK_BACKOFF",
    "LOCK_INTERVAL",
    "LOCK_MAX",
    "LOCK_MODE",
    "LOCK_NODES",
    "LOCK_TIMEOUT",
    "TARGET_MIN_RESOURCES_PREFIX",
    "TARGET_MIN_WAITING",
    "LockMode",
    "ReservationArgs",
]

LOCK_MODE = "lock-mode"
LOCK_NODES = "lock-nodes"
LOCK_INTERVAL = "lock-interval"
LOCK_TIMEOUT = "lock-timeout"
LOCK_MAX = "lock-max"
LOCK_BACKOFF = "lock-backoff"
TARGET_MIN_WAITING = "target-min-waiting"
TARGET_MIN_RESOURCES_PREFIX = "target-min-resources."

DEFAULT_LOCK_INTERVAL = timedelta(seconds=1)
DEFAULT_LOCK_NODES = "20%"


class LockMode(enum.StrEnum):
    """How many nodes ``reserve`` locks at a time."""

    SINGLE = "single"
    MULTI = "multi"
    CLUSTER = "cluster"


@dataclass(frozen=True, slots=True)
class ReservationArgs:
    """The plugin's arguments, checked.

    Attributes:
        lock_mode: single, multi or cluster.
        lock_count: nodes per step for ``multi`` (``None`` when a share is given).
        lock_share: share of the nodes per step for ``multi``, in (0, 1].
        lock_interval: the time between two lock steps.
        lock_timeout: when set, the whole cluster is locked this long after the election.
        limits: ``lock-max`` and ``lock-backoff``.
        min_waiting: the waiting-time threshold, if any.
        min_resources: the requested-resources threshold, if any.
    """

    lock_mode: LockMode = LockMode.SINGLE
    lock_count: int | None = None
    lock_share: float = 0.2
    lock_interval: timedelta = DEFAULT_LOCK_INTERVAL
    lock_timeout: timedelta | None = None
    limits: ReservationLimits = field(default_factory=ReservationLimits)
    min_waiting: timedelta | None = None
    min_resources: Resource | None = None

    @classmethod
    def parse(cls, arguments: Arguments) -> ReservationArgs:
        """Read and check the arguments.

        Raises:
            ValueError: on an unknown lock mode, a bad count, share, duration or quantity.
        """
        mode_text = get_str(arguments, LOCK_MODE, LockMode.SINGLE.value)
        try:
            mode = LockMode(mode_text)
        except ValueError:
            raise ValueError(
                f"{LOCK_MODE} {mode_text!r} is not one of single, multi, cluster"
            ) from None
        count, lock_share = _lock_step(arguments.get(LOCK_NODES, DEFAULT_LOCK_NODES))
        thresholds: dict[str, str | int | float] = {}
        for key in sorted(arguments):
            if key.startswith(TARGET_MIN_RESOURCES_PREFIX):
                value = arguments[key]
                if isinstance(value, bool):
                    raise ValueError(f"{key} must be a quantity, got {value!r}")
                thresholds[key.removeprefix(TARGET_MIN_RESOURCES_PREFIX)] = value
        try:
            amounts = parse_resources(thresholds)
        except (QuantityError, ValueError) as exc:
            raise ValueError(f"{TARGET_MIN_RESOURCES_PREFIX}*: {exc}") from exc
        interval = get_duration(arguments, LOCK_INTERVAL, DEFAULT_LOCK_INTERVAL)
        timeout = get_duration(arguments, LOCK_TIMEOUT, None)
        lock_max = get_duration(arguments, LOCK_MAX, DEFAULT_LOCK_MAX) or DEFAULT_LOCK_MAX
        backoff = get_duration(arguments, LOCK_BACKOFF, DEFAULT_LOCK_BACKOFF) or timedelta(0)
        if timeout and timeout >= lock_max:
            raise ValueError(
                f"{LOCK_TIMEOUT} ({seconds_text(timeout)}) must be shorter than {LOCK_MAX} "
                f"({seconds_text(lock_max)})"
            )
        return cls(
            lock_mode=mode,
            lock_count=count,
            lock_share=lock_share,
            lock_interval=interval or timedelta(0),
            lock_timeout=timeout or None,
            limits=ReservationLimits(lock_max=lock_max, lock_backoff=backoff),
            min_waiting=get_duration(arguments, TARGET_MIN_WAITING, None),
            min_resources=Resource({k: float(v) for k, v in amounts.items()}) if amounts else None,
        )

    def step_size(self, nodes: int) -> int:
        """How many nodes one lock step takes in this mode, for a cluster of ``nodes``."""
        if self.lock_mode is LockMode.SINGLE:
            return 1
        if self.lock_mode is LockMode.CLUSTER:
            return nodes
        if self.lock_count is not None:
            return self.lock_count
        return max(1, math.ceil(self.lock_share * nodes))


def _lock_step(raw: object) -> tuple[int | None, float]:
    if isinstance(raw, bool):
        raise ValueError(f"{LOCK_NODES} must be a count or a percentage, got {raw!r}")
    if isinstance(raw, int):
        if raw < 1:
            raise ValueError(f"{LOCK_NODES} must be at least 1, got {raw}")
        return raw, 0.0
    text = str(raw).strip()
    if text.endswith("%"):
        try:
            percent = float(text[:-1])
        except ValueError:
            raise ValueError(f"{LOCK_NODES} {raw!r} is not a percentage") from None
        if not 0 < percent <= 100:
            raise ValueError(f"{LOCK_NODES} {raw!r} must be above 0% and at most 100%")
        return None, percent / 100
    try:
        count = int(text)
    except ValueError:
        raise ValueError(f"{LOCK_NODES} {raw!r} is neither a count nor a percentage") from None
    return _lock_step(count)

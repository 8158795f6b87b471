"""Ages as kubectl prints them (``5s``, ``3m12s``, ``2h5m``, ``4d``).

Ported from k8s.io/apimachinery@v0.30 ``pkg/util/duration/duration.go``
``HumanDuration``, which kubectl uses for its AGE column and the ages of ``describe``'s
events.
"""

from __future__ import annotations

from datetime import datetime


def human_duration(seconds: float) -> str:
    """A duration the way kubectl says it: two units at most, coarser as it grows."""
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    total = int(seconds)
    if total < 120:
        return f"{total}s"
    minutes = total // 60
    if minutes < 10:
        rest = total % 60
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h{rest}m" if rest else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d{rest}h" if rest else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    years, days = hours // (24 * 365), hours // 24 % 365
    if hours < 24 * 365 * 8:
        return f"{years}y{days}d" if days else f"{years}y"
    return f"{years}y"


def age(since: datetime, now: datetime) -> str:
    """How long ago ``since`` was, seen at ``now``."""
    return human_duration((now - since).total_seconds())


EXPIRED = "expired"
"""What :func:`time_left` says of a time that has passed."""


def time_left(until: datetime, now: datetime) -> str:
    """How long until ``until``, seen at ``now``: ``in 4m12s``; ``expired`` once it passed."""
    seconds = (until - now).total_seconds()
    return f"in {human_duration(seconds)}" if seconds > 0 else EXPIRED

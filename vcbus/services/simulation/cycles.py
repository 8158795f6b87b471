"""What each scheduling cycle decided, for ``vcbus simulate --cycles``.

The scheduling services tell a :class:`CycleLog` each cycle's session result
(``on_cycle``); the log keeps, per cycle that decided anything, the service, the time
(seconds from the start of the run) and:

- ``enqueue``: every job enqueue tried, in order, with its queue and the queue's share
  when it was picked, whether it was admitted, and why not;
- ``phases``: the PodGroup phase or reason changes the cycle publishes (podgroup-enqueue);
- ``bound``: per job, the pods bound and their nodes;
- ``skipped``: per job the allocator could not (fully) place, the reason and message.

Bounded (docs/design.md#bounded-records): at most ``MAX_CYCLES`` cycles, the first ones
(``left_out`` counts the rest), and ``MAX_ITEMS`` items per list, with ``more`` counting what each
list left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from vcbus.core.scheduling.framework.results import CycleObserver, SessionResult

MAX_CYCLES = 2000
MAX_ITEMS = 100


def _bounded(items: Sequence[dict[str, object]], name: str, entry: dict[str, object]) -> None:
    if not items:
        return
    entry[name] = list(items[:MAX_ITEMS])
    if len(items) > MAX_ITEMS:
        more = entry.setdefault("more", {})
        assert isinstance(more, dict)
        more[name] = len(items) - MAX_ITEMS


def describe(result: SessionResult, *, phases: bool) -> dict[str, object]:
    """One cycle's decisions as plain data (empty when it decided nothing).

    ``phases``: whether the service publishes PodGroup phases (podgroup-enqueue).
    """
    entry: dict[str, object] = {}
    steps: list[dict[str, object]] = [
        {
            "queue": step.queue,
            "share": round(step.share, 4) if step.share is not None else None,
            "job": step.job,
            "admitted": step.admitted,
            "reason": step.reason,
        }
        for step in result.enqueue_steps
    ]
    _bounded(steps, "enqueue", entry)
    changes: list[dict[str, object]] = [
        {
            "job": update.job,
            "phase": str(update.phase),
            "reason": next((c.reason for c in update.conditions if c.reason), ""),
        }
        for update in (result.status_updates if phases else ())
    ]
    _bounded(changes, "phases", entry)
    bound: dict[str, list[str]] = {}
    for decision in result.decisions:
        bound.setdefault(decision.job, []).append(decision.node)
    _bounded(
        [
            {"job": job, "pods": len(nodes), "nodes": sorted(set(nodes))}
            for job, nodes in bound.items()
        ],
        "bound",
        entry,
    )
    skipped = {e.job: e for e in result.explanations if e.task is None}
    _bounded(
        [
            {"job": job, "reason": e.reason, "message": e.message}
            for job, e in sorted(skipped.items())
        ],
        "skipped",
        entry,
    )
    return entry


class CycleLog:
    """The cycles of one run, as the services report them."""

    def __init__(self) -> None:
        self.origin: datetime | None = None
        self._cycles: list[tuple[datetime, str, dict[str, object]]] = []
        self.left_out = 0

    def observer(self, service: str, *, phases: bool = False) -> CycleObserver:
        """The ``on_cycle`` callback for ``service`` (``phases``: it publishes them)."""

        def record(at: datetime, result: SessionResult) -> None:
            entry = describe(result, phases=phases)
            if not entry:
                return
            if len(self._cycles) >= MAX_CYCLES:
                self.left_out += 1
                return
            self._cycles.append((at, service, entry))

        return record

    def report(self) -> list[dict[str, object]]:
        """The cycles in order, each ``{t, service, ...}``."""
        origin = self.origin
        out: list[dict[str, object]] = []
        for at, service, entry in self._cycles:
            t = (at - origin).total_seconds() if origin is not None else 0.0
            out.append({"t": round(max(t, 0.0), 6), "service": service, **entry})
        return out

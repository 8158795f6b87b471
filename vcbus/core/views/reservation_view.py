"""The reservation as users see it: target job and locked nodes, from ``reservations``."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from vcbus.contracts import Event, NodesLocked, NodesUnlocked, TargetJobElected


@dataclass(slots=True)
class ReservationView:
    """The reservation: target job and locked nodes, from the newest generation seen."""

    generation: int = -1
    target: str = ""
    locks: dict[str, str] = field(default_factory=dict)
    why: str = ""
    """Why the target was elected."""
    until: datetime | None = None
    """When the locks end at the latest (``lock-max``)."""
    lock_reasons: dict[str, str] = field(default_factory=dict)
    """Node → why it was locked."""

    def apply(self, event: Event) -> None:
        """Fold one ``reservations`` event; events of an older generation are dropped."""
        if not isinstance(event, TargetJobElected | NodesLocked | NodesUnlocked):
            return
        if event.generation < self.generation:
            return
        if event.generation > self.generation:
            self.generation = event.generation
            self._clear()
        match event:
            case TargetJobElected():
                self.target, self.why = event.job, event.reason
                self.until = event.until or self.until
            case NodesLocked():
                self.target = event.job
                self.until = event.until or self.until
                self.locks.update(dict.fromkeys(event.nodes, event.job))
                self.lock_reasons.update(dict.fromkeys(event.nodes, event.reason))
            case NodesUnlocked():
                self._clear()

    def _clear(self) -> None:
        self.target, self.why, self.until = "", "", None
        self.locks, self.lock_reasons = {}, {}

    def locked_for(self, job: str) -> list[str]:
        """The nodes locked for ``job``, sorted."""
        return sorted(node for node, holder in self.locks.items() if holder == job)

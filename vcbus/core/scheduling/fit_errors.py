"""Why a task fits no node: the reasons per node, counted (Volcano's ``FitErrors``).

Port of volcano@v1.12.0 ``pkg/scheduler/api/unschedule_info.go`` (``FitErrors``, ``FitError``
and the reasons' texts). It belongs to the model, as in Volcano's ``api`` package: a job's
``nodes_fit_errors`` hold them, and the framework's placement and the plugins fill them.

Deliberate deviation: ``FitErrors`` keeps a histogram of reasons over nodes (reason → node
count), which is all Volcano's message prints, instead of one error object per node.
"""

from __future__ import annotations

from dataclasses import dataclass, field

NODE_RESOURCE_FIT_FAILED = "node(s) resource fit failed"
NODE_POD_NUMBER_EXCEEDED = "node(s) pod number exceeded"
NODE_SELECTOR_MISMATCH = "node(s) didn't match Pod's node affinity/selector"
NODE_UNTOLERATED_TAINT = "node(s) had untolerated taint"
NODE_UNSCHEDULABLE = "node(s) were unschedulable"
NODE_LOCKED_PREFIX = "node(s) locked for target job"


def insufficient(dimension: str) -> str:
    """Volcano ``WrapInsufficientResourceReason``: ``Insufficient <first dimension>``."""
    return f"Insufficient {dimension}"


@dataclass(slots=True)
class FitErrors:
    """Why a task fits no node: reasons with the number of nodes each (Volcano ``FitErrors``)."""

    total: int = 0
    reasons: dict[str, int] = field(default_factory=dict)
    error: str = ""

    def add(self, reason: str, nodes: int = 1) -> None:
        """Count ``nodes`` more nodes rejected for ``reason``."""
        if nodes > 0:
            self.reasons[reason] = self.reasons.get(reason, 0) + nodes

    def set_error(self, message: str) -> None:
        """Record an error that is not about nodes (Volcano ``SetError``)."""
        self.error = message

    def message(self) -> str:
        """Volcano's text: ``0/3 nodes are unavailable: 1 ..., 2 Insufficient cpu.``."""
        if self.error and not self.reasons:
            return self.error
        histogram = ", ".join(sorted(f"{n} {reason}" for reason, n in self.reasons.items()))
        return f"0/{self.total} nodes are unavailable: {histogram}."

    def summary(self) -> str:
        """Vcbus's short text: ``3 nodes Insufficient cpu, 1 node pod number exceeded``."""
        if self.error and not self.reasons:
            return self.error
        parts = []
        for reason, n in sorted(self.reasons.items(), key=lambda item: (-item[1], item[0])):
            noun = "node" if n == 1 else "nodes"
            text = reason.removeprefix("node(s) ")
            parts.append(f"{n} {noun} {text}")
        return ", ".join(parts)

    def only(self, prefix: str) -> bool:
        """Whether every rejection has a reason starting with ``prefix``."""
        return bool(self.reasons) and all(r.startswith(prefix) for r in self.reasons)

"""Expected outcomes as values: votes, statuses, validation results and fit errors.

Port of volcano@v1.12.0 ``pkg/scheduler/api/unschedule_info.go`` (``FitErrors``, ``FitError``),
``pkg/scheduler/api/types.go`` (``ValidateResult``, ``Status`` codes) and
``pkg/scheduler/plugins/util/util.go`` (``Permit``/``Abstain``/``Reject``).

Deliberate deviations:
- ``FitErrors`` keeps a histogram of reasons over nodes (reason → node count), which is all
  Volcano's message prints, instead of one error object per node.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class Vote(enum.IntEnum):
    """A plugin's vote on a job (Volcano ``util.Permit``/``Abstain``/``Reject``)."""

    REJECT = -1
    ABSTAIN = 0
    PERMIT = 1


class Code(enum.IntEnum):
    """Status codes of a predicate (Volcano ``api.Success`` …)."""

    SUCCESS = 0
    ERROR = 1
    UNSCHEDULABLE = 2
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    WAIT = 4
    SKIP = 5


@dataclass(frozen=True, slots=True)
class Status:
    """Why a predicate rejected a node (Volcano ``api.Status``)."""

    code: Code
    reason: str
    plugin: str = ""


@dataclass(frozen=True, slots=True)
class ValidateResult:
    """Whether a job may be scheduled at all (Volcano ``api.ValidateResult``)."""

    passed: bool
    reason: str = ""
    message: str = ""


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

"""Reserve: lock nodes for the target job until it is ready, then release them.

Port of volcano@v1.5.1 ``pkg/scheduler/actions/reserve/reserve.go`` (``Execute``): without a
target nothing happens; a target that is gone, or ready, is cleared and every node unlocked
(vcbus also releases one that became infeasible or reached ``lock-max``);
otherwise the plugins lock more nodes (``ssn.reserved_nodes``; the ``reservation`` plugin
does, by its lock mode).

Deliberate deviations:
- The release is one change (one ``NodesUnlocked`` event) carrying every node it frees.
- The locks hold: the allocator's ``predicates`` plugin keeps other jobs' new pods off locked
  nodes (v1.5.1 never applied them, B3.12).
"""

from __future__ import annotations

from vcbus.core.scheduling.framework.reservation_changes import release_reason, release_target
from vcbus.core.scheduling.framework.session import Session

NAME = "reserve"


class ReserveAction:
    """The ``reserve`` action."""

    name = NAME

    def execute(self, ssn: Session) -> None:
        """Release a gone or ready target, or lock more nodes for it."""
        if ssn.reservation.target_job is None:
            return
        release = release_reason(ssn)
        if release is not None:
            release_target(ssn, *release)
            return
        ssn.reserved_nodes()


def new() -> ReserveAction:
    """Build the action."""
    return ReserveAction()

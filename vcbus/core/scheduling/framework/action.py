"""What an action is: a name and ``execute(ssn)``.

Port of volcano@v1.12.0 ``pkg/scheduler/framework/interface.go`` (``Action``).

Deliberate deviations:
- ``Initialize``/``UnInitialize`` are gone: an action is built fresh for every session from
  the ``actions.ACTIONS`` table, and reads its arguments from the session.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from vcbus.core.scheduling.framework.session import Session


class Action(Protocol):
    """A scheduling action (``allocate``, ``backfill`` …)."""

    @property
    def name(self) -> str:
        """The action's configuration name."""
        ...

    def execute(self, ssn: Session) -> None:
        """Run the action; read through the session, change it only through statements."""
        ...

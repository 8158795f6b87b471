"""What a plugin is: a name and two hooks, built from its arguments by a ``PluginBuilder``.

Port of volcano@v1.12.0 ``pkg/scheduler/framework/interface.go`` (``Plugin``) and
``arguments.go`` (``Arguments.GetInt``/``GetFloat64``/``GetBool``).

Deliberate deviations:
- No global registry: ``open_session`` takes a table of builders (``plugins.PLUGIN_BUILDERS``
  in production, a test's own table in tests).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from shared.scheduling.framework.conf import Arguments

if TYPE_CHECKING:
    from shared.scheduling.framework.session import Session


class Plugin(Protocol):
    """A scheduler plugin: registers callbacks at session open, reports at session close."""

    @property
    def name(self) -> str:
        """The plugin's configuration name (``gang``, ``drf`` …)."""
        ...

    def on_session_open(self, ssn: Session) -> None:
        """Register callbacks on the session."""
        ...

    def on_session_close(self, ssn: Session) -> None:
        """Record what the plugin concludes (conditions, explanations)."""
        ...


PluginBuilder = Callable[[Arguments], Plugin]


def get_int(arguments: Arguments, key: str, default: int) -> int:
    """Return an integer argument, or ``default`` when absent or not a number."""
    value = arguments.get(key)
    if isinstance(value, bool) or value is None:
        return default
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value)
    try:
        return int(value)
    except ValueError:
        return default


def get_float(arguments: Arguments, key: str, default: float) -> float:
    """Return a float argument, or ``default`` when absent or not a number."""
    value = arguments.get(key)
    if isinstance(value, bool) or value is None:
        return default
    if isinstance(value, int | float):
        return float(value)
    try:
        return float(value)
    except ValueError:
        return default


def get_bool(arguments: Arguments, key: str, default: bool) -> bool:
    """Return a boolean argument (``true``/``false`` text accepted)."""
    value = arguments.get(key)
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    return default


def get_str(arguments: Arguments, key: str, default: str) -> str:
    """Return a text argument."""
    value = arguments.get(key)
    return value if isinstance(value, str) else default

"""What a plugin is: a name and two hooks, built from its arguments by a ``PluginBuilder``.

Port of volcano@v1.12.0 ``pkg/scheduler/framework/interface.go`` (``Plugin``) and
``arguments.go`` (``Arguments.GetInt``/``GetFloat64``/``GetBool``).

Deliberate deviations:
- No global registry: ``open_session`` takes a table of builders (``plugins.PLUGIN_BUILDERS``
  in production, a test's own table in tests).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Protocol

from shared.scheduling.framework.conf import Arguments, ArgValue

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


_DURATION_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")


def parse_duration(value: ArgValue) -> timedelta:
    """Parse a duration: seconds as a number, or Go's form (``90s``, ``5m``, ``1h30m``).

    Raises:
        ValueError: when the value is negative or not a duration.
    """
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a duration")
    if isinstance(value, int | float):
        seconds = float(value)
    else:
        text = value.strip()
        try:
            seconds = float(text)
        except ValueError:
            parts = _DURATION_PART.findall(text)
            if not parts or "".join(n + u for n, u in parts) != text:
                raise ValueError(
                    f"{value!r} is not a duration; write seconds or e.g. 30s, 5m, 1h30m"
                ) from None
            seconds = sum(float(n) * _DURATION_UNITS[u] for n, u in parts)
    if seconds < 0:
        raise ValueError(f"{value!r} is a negative duration")
    return timedelta(seconds=seconds)


def get_duration(arguments: Arguments, key: str, default: timedelta | None) -> timedelta | None:
    """Return a duration argument (see ``parse_duration``), or ``default`` when absent.

    Raises:
        ValueError: when the value is not a duration.
    """
    value = arguments.get(key)
    if value is None:
        return default
    return parse_duration(value)

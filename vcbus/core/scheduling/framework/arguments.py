"""Reading plugin and action arguments, typed: numbers, booleans, text and durations.

Port of volcano@v1.12.0 ``pkg/scheduler/framework/arguments.go``
(``Arguments.GetInt``/``GetFloat64``/``GetBool``). What a plugin is (``Plugin``,
``PluginBuilder``) is declared beside the session that opens and closes it
(``framework.session``).

Deliberate deviations:
- Durations are read here too (``parse_duration``, ``get_duration``): seconds as a number,
  or Go's form.
"""

from __future__ import annotations

import re
from datetime import timedelta

from vcbus.core.scheduling.framework.conf import Arguments, ArgValue


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

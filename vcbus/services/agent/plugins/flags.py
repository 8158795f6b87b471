"""Plugin arguments read as Go's ``flag`` package reads them (each plugin's ``addFlags``).

Pure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

Flags = dict[str, str | int | bool]


def go_flags(arguments: Sequence[str], defaults: Mapping[str, str | int | bool]) -> Flags:
    """Read plugin arguments as Go's ``flag.FlagSet.Parse`` does with ``ContinueOnError``.

    ``-name value``, ``-name=value`` and ``--name=value``; a bool flag takes no separate
    value (``-b`` or ``-b=false``). Parsing stops at the first argument that is not a
    flag, after ``--``, and at the first error (unknown flag, bad value, missing value),
    keeping what was read before it, as Volcano's plugins only log the error.

    Args:
        arguments: the plugin's arguments (``spec.plugins[name]``).
        defaults: each flag's default; its type is the flag's type.

    Returns:
        Every flag's value.
    """
    values: Flags = dict(defaults)
    rest = list(arguments)
    while rest:
        argument = rest.pop(0)
        if len(argument) < 2 or not argument.startswith("-"):
            return values
        name = argument[2:] if argument.startswith("--") else argument[1:]
        if not name:  # "--": the end of the flags
            return values
        if name.startswith(("-", "=")):
            return values
        name, has_value, value = name.partition("=")
        if name not in defaults:
            return values
        default = defaults[name]
        if isinstance(default, bool):
            parsed_bool = _go_bool(value) if has_value else True
            if parsed_bool is None:
                return values
            values[name] = parsed_bool
            continue
        if not has_value:
            if not rest:
                return values
            value = rest.pop(0)
        if isinstance(default, int):
            parsed_int = _go_int(value)
            if parsed_int is None:
                return values
            values[name] = parsed_int
        else:
            values[name] = value
    return values


def int_flag(flags: Mapping[str, str | int | bool], name: str) -> int:
    """An int flag's value (``go_flags`` keeps each flag's type)."""
    value = flags[name]
    return value if isinstance(value, int) else 0


_GO_OCTAL = re.compile(r"[+-]?0[0-7_]+")
_GO_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_GO_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


def _go_bool(text: str) -> bool | None:
    """``strconv.ParseBool``; ``None`` when invalid."""
    if text in _GO_TRUE:
        return True
    if text in _GO_FALSE:
        return False
    return None


def _go_int(text: str) -> int | None:
    """``strconv.ParseInt(text, 0, 64)``; ``None`` when invalid.

    Decimal, ``0x``, ``0o``, ``0b``, and a leading ``0`` for octal.
    """
    if not text or text != text.strip():
        return None
    try:
        value = int(text, 8) if _GO_OCTAL.fullmatch(text) else int(text, 0)
    except ValueError:
        return None
    return value if -(2**63) <= value < 2**63 else None

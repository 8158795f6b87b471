"""How ``vcbus describe`` lays its text out, as kubectl's: labelled lines and indented tables."""

from __future__ import annotations

from collections.abc import Sequence

from vcbus.core.views.table import render_table


def field(label: str, value: object, indent: int = 0) -> str:
    """``Label:`` and its value, the values of a section in one column."""
    width = max(18 - indent, len(label) + 2)
    return f"{' ' * indent}{label + ':':<{width}}{value}"


def table(header: Sequence[str], rows: Sequence[Sequence[str]], indent: int = 2) -> list[str]:
    """A table under a section, indented."""
    return [" " * indent + line for line in render_table(header, rows)]

"""The one renderer of the CLI's tables: columns aligned, every cell escaped.

Cells are escaped with :func:`vcbus.core.printable.cell`, so a value stays on its row, and
padded to their column's width; columns are ``gap`` spaces apart (three: kubectl's look),
trailing spaces dropped. One column may be styled (coloured on a terminal) by ``paint``,
which gets the padded, escaped cell and the raw text it shows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from vcbus.core.printable import cell

GAP = 3
"""Spaces between columns."""

Paint = Callable[[str, str], str]
"""``(padded escaped cell, raw text) -> styled cell``."""


def widths_of(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[int]:
    """The width of each column: its longest cell, as printed (escaped)."""
    widths = [len(cell(text)) for text in header]
    for row in rows:
        widths = [max(w, len(cell(text))) for w, text in zip(widths, row, strict=False)]
    return widths


def format_row(
    cells: Sequence[str],
    widths: Sequence[int],
    *,
    gap: int = GAP,
    paint: Paint | None = None,
    paint_at: int | None = None,
) -> str:
    """Cells, escaped and padded to ``widths``, ``gap`` spaces apart.

    With ``paint`` and ``paint_at``, that cell is styled by ``paint``.
    """
    padded = [cell(text).ljust(width) for text, width in zip(cells, widths, strict=False)]
    if paint is not None and paint_at is not None and paint_at < len(padded):
        padded[paint_at] = paint(padded[paint_at], cells[paint_at])
    return (" " * gap).join(padded).rstrip()


def render_table(
    header: Sequence[str], rows: Sequence[Sequence[str]], *, gap: int = GAP
) -> list[str]:
    """The header and rows, columns aligned, as lines (without newlines)."""
    widths = widths_of(header, rows)
    return [format_row(row, widths, gap=gap) for row in (header, *rows)]

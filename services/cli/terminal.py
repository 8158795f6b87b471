"""What the CLI writes: user-supplied text with its control characters escaped.

Every command writes through :func:`write` or :func:`error`, which escape as
:func:`shared.printable.printable` does (newline and tab kept, since the CLI lays its text
out with them); a table cell is escaped with :func:`cell`, so one value stays on its row.
"""

from __future__ import annotations

import sys
from typing import TextIO

from shared.printable import cell, printable

__all__ = ["cell", "error", "printable", "write"]


def write(text: str, stream: TextIO | None = None) -> None:
    """Write :func:`printable` ``text`` to ``stream`` (standard output) and flush it."""
    out = stream or sys.stdout
    out.write(printable(text))
    out.flush()


def error(text: str) -> None:
    """Write :func:`printable` ``text`` to standard error."""
    write(text, sys.stderr)

r"""What the CLI writes: user-supplied text with its control characters escaped.

Names, reasons and messages come from users (job, queue and task names, annotations, the
paths and values admission echoes in a rejection) or from whoever wrote to a topic.
Written as they are, an ``ESC`` or a C1 ``CSI`` in them would drive the terminal: clear
the screen, set the window title, rewrite lines printed before. Every command writes
through :func:`write`, which escapes every control character (C0, DEL, C1) and the
bidirectional overrides as ``\u001b``, ``\u202e`` (an escape JSON and YAML read as the
same character, so ``-o json`` stays valid JSON); newline and tab are kept, since the CLI
lays its text out with them. A table cell is escaped with :func:`cell`, newline and tab
included, so one value stays on its row.
"""

from __future__ import annotations

import sys
from typing import TextIO

_CONTROLS = [*range(0x20), 0x7F, *range(0x80, 0xA0)]
_BIDI = [*range(0x202A, 0x202F), *range(0x2066, 0x206A)]
"""Embeddings, overrides and isolates: they reorder what a terminal shows."""

_CELL = {code: f"\\u{code:04x}" for code in (*_CONTROLS, *_BIDI)}
_TEXT = {code: text for code, text in _CELL.items() if chr(code) not in "\n\t"}


def printable(text: str) -> str:
    """``text`` with every control character but newline and tab escaped."""
    return text.translate(_TEXT)


def cell(text: str) -> str:
    """``text`` with every control character escaped, newline and tab included."""
    return text.translate(_CELL)


def write(text: str, stream: TextIO | None = None) -> None:
    """Write :func:`printable` ``text`` to ``stream`` (standard output) and flush it."""
    out = stream or sys.stdout
    out.write(printable(text))
    out.flush()


def error(text: str) -> None:
    """Write :func:`printable` ``text`` to standard error."""
    write(text, sys.stderr)

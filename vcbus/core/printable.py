r"""Text as a terminal may show it: every control character escaped.

Names, reasons and messages come from users (job, queue and task names, annotations, the
paths and values admission echoes in a rejection) or from whoever wrote to a topic.
Written as they are, an ``ESC`` or a C1 ``CSI`` in them would drive the terminal: clear
the screen, set the window title, rewrite lines printed before. :func:`printable` escapes
every control character (C0, DEL, C1) and the bidirectional overrides as ``\u001b``,
``\u202e`` (an escape JSON and YAML read as the same character, so JSON stays valid JSON),
keeping newline and tab for text laid out in lines; :func:`cell` escapes those too, for a
value that must stay on one line (a table cell, a log line).
"""

from __future__ import annotations

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

"""What the CLI writes: user-supplied text with its control characters escaped.

Every command writes through :func:`write` or :func:`error`, which escape as
:func:`vcbus.core.printable.printable` does (newline and tab kept, since the CLI lays its text
out with them); a table cell is escaped with :func:`cell`, so one value stays on its row.
Text made only of escaped pieces may be coloured with :func:`paint` and written with
:func:`write_escaped`. Colours are used on a terminal only, and never when ``NO_COLOR`` is
set (https://no-color.org), as kubectl's and most tools' do.
"""

from __future__ import annotations

import os
import sys
from typing import TextIO

from vcbus.core.printable import cell, printable

__all__ = [
    "cell",
    "colour_of",
    "colours_on",
    "error",
    "paint",
    "printable",
    "write",
    "write_escaped",
]

_CODES = {"green": "32", "yellow": "33", "red": "31"}

_STATES = {
    "green": frozenset({"Running", "Completed", "Succeeded", "Ready", "Open", "Normal"}),
    "yellow": frozenset(
        {"Pending", "Inqueue", "Restarting", "Aborting", "Completing", "Terminating", "Closing"}
    ),
    "red": frozenset(
        {
            "Failed",
            "Aborted",
            "Terminated",
            "Rejected",
            "Deleted",
            "Unknown",
            "SchedulingDisabled",
            "Closed",
            "Warning",
        }
    ),
}


def colours_on(stream: TextIO | None = None) -> bool:
    """Whether to colour what goes to ``stream`` (standard output): a terminal, no NO_COLOR."""
    out = stream or sys.stdout
    return not os.environ.get("NO_COLOR") and out.isatty()


def colour_of(state: str) -> str:
    """The colour a phase or state is shown in (``""``: none)."""
    return next((colour for colour, states in _STATES.items() if state in states), "")


def paint(escaped: str, colour: str) -> str:
    """``escaped`` (already escaped text) in ``colour``; unchanged for no colour."""
    code = _CODES.get(colour)
    return f"\x1b[{code}m{escaped}\x1b[0m" if code else escaped


def write(text: str, stream: TextIO | None = None) -> None:
    """Write :func:`printable` ``text`` to ``stream`` (standard output) and flush it."""
    out = stream or sys.stdout
    out.write(printable(text))
    out.flush()


def write_escaped(text: str) -> None:
    """Write text made of escaped pieces (and colours) to standard output, as it is."""
    sys.stdout.write(text)
    sys.stdout.flush()


def error(text: str) -> None:
    """Write :func:`printable` ``text`` to standard error."""
    write(text, sys.stderr)

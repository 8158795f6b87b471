"""What ``vcbus get`` lists, and how a listing prints: rows, queries, kinds, and formats.

A :class:`Kind` names its topics, its header and the function that builds its rows
(:mod:`vcbus.services.cli.kinds`); :func:`render` prints rows as a table, ``-o wide``, JSON or
YAML, and :func:`render_change` prints one changed row while watching.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

import yaml

from vcbus.contracts import Topic
from vcbus.core.runtime.clock import SystemClock
from vcbus.core.views.age import age
from vcbus.core.views.table import format_row, widths_of
from vcbus.services.cli import terminal
from vcbus.services.cli.status_store import StatusStore

Object = dict[str, object]


@dataclass(frozen=True, slots=True)
class Row:
    """One listed thing: its table cells, its object for ``-o json|yaml``, and more.

    ``wide`` are the cells ``-o wide`` adds; ``created`` makes the AGE column.
    """

    cells: tuple[str, ...]
    obj: Object
    wide: tuple[str, ...] = ()
    created: datetime | None = None


@dataclass(frozen=True, slots=True)
class Query:
    """What to list: names (``name`` or ``namespace/name``) and a namespace, both optional."""

    names: tuple[str, ...] = ()
    namespace: str | None = None
    keys: frozenset[str] | None = None
    """Only these keys (a watch recomputes the rows of the keys that changed)."""

    def select(self, available: Iterable[str]) -> list[str]:
        """The keys among ``available`` to consider, sorted."""
        if self.keys is None:
            return sorted(available)
        return sorted(set(available) & self.keys)

    def matches(self, key: str) -> bool:
        """Whether a ``namespace/name`` (or a plain name) is asked for.

        A name given as ``namespace/name`` is matched whatever the namespace asked for.
        """
        namespace, _, name = key.rpartition("/")
        in_namespace = self.namespace is None or not namespace or namespace == self.namespace
        if not self.names:
            return in_namespace
        return any(n == key or (n == name and in_namespace) for n in self.names)

    def job_key(self) -> str | None:
        """The one job key asked for, when exactly one name is given."""
        if len(self.names) != 1:
            return None
        name = self.names[0]
        return name if "/" in name else f"{self.namespace or 'default'}/{name}"


RowsOf = Callable[[StatusStore, Query], dict[str, Row]]


@dataclass(frozen=True, slots=True)
class Kind:
    """A kind of thing ``vcbus get`` lists."""

    name: str
    topics: tuple[Topic, ...]
    header: tuple[str, ...]
    rows: RowsOf
    job_keyed: bool = False
    incremental: bool = False
    """Whether a row depends only on its own key's records (a watch then recomputes only
    the rows of the keys that changed)."""
    wide_header: tuple[str, ...] = ()
    wide_topics: tuple[Topic, ...] = ()
    """What ``-o wide`` adds: its columns, and the topics read for them."""
    aged: bool = False
    """Whether the table has an AGE column (from :attr:`Row.created`)."""
    state: str = "PHASE"
    """The column coloured on a terminal."""

    def header_of(self, output: str) -> tuple[str, ...]:
        """The table's header for ``output`` (``table`` or ``wide``)."""
        aged = ("AGE",) if self.aged else ()
        return (*self.header, *aged, *(self.wide_header if output == "wide" else ()))

    def cells_of(self, row: Row, output: str, now: datetime) -> tuple[str, ...]:
        """A row's cells for ``output`` (``table`` or ``wide``), its AGE counted to ``now``."""
        aged = (age(row.created, now) if row.created else "<unknown>",) if self.aged else ()
        return (*row.cells, *aged, *(row.wide if output == "wide" else ()))


# -- output -------------------------------------------------------------------------------


def _paint(padded: str, state: str) -> str:
    """A state cell coloured by the state it names (on a terminal)."""
    return terminal.paint(padded, terminal.colour_of(state))


def document_text(obj: object, output: str) -> str:
    """``obj`` as indented JSON or as YAML, escaped."""
    if output == "json":
        return terminal.printable(json.dumps(obj, indent=2) + "\n")
    return terminal.printable(yaml.safe_dump(obj, sort_keys=False))


def render(
    kind: Kind,
    rows: Mapping[str, Row],
    output: str,
    *,
    now: datetime | None = None,
    colour: bool = False,
) -> str:
    """The listing of ``rows`` as a table, JSON or YAML, escaped (an empty table is ``""``).

    Args:
        kind: what is listed.
        rows: the rows.
        output: ``table``, ``wide``, ``json`` or ``yaml``.
        now: the time ages are counted to (the clock's when not given).
        colour: colour the state column.
    """
    if output in ("json", "yaml"):
        items = [r.obj for r in rows.values()]
        return document_text({"apiVersion": "v1", "kind": "List", "items": items}, output)
    if not rows:
        return ""
    at = now or SystemClock().now()
    header = kind.header_of(output)
    cells = [kind.cells_of(r, output, at) for r in rows.values()]
    widths = widths_of(header, cells)
    paint_at = header.index(kind.state) if colour and kind.state in header else None
    lines = [format_row(header, widths)]
    lines.extend(format_row(c, widths, paint=_paint, paint_at=paint_at) for c in cells)
    return "\n".join(lines) + "\n"


def render_change(
    kind: Kind,
    row: Row,
    output: str,
    widths: Sequence[int],
    *,
    now: datetime | None = None,
    colour: bool = False,
) -> str:
    """One changed row while watching: a table line, a JSON line, or a YAML document."""
    if output == "json":
        return terminal.printable(json.dumps(row.obj) + "\n")
    if output == "yaml":
        return "---\n" + document_text(row.obj, output)
    header = kind.header_of(output)
    paint_at = header.index(kind.state) if colour and kind.state in header else None
    cells = kind.cells_of(row, output, now or SystemClock().now())
    return format_row(cells, widths, paint=_paint, paint_at=paint_at) + "\n"


def deleted_row(kind: Kind, previous: Row) -> Row:
    """The row of something gone, shown once while watching (phase ``Deleted``)."""
    cells = list(previous.cells)
    if "PHASE" in kind.header:
        cells[kind.header.index("PHASE")] = "Deleted"
    return Row(tuple(cells), {**previous.obj, "phase": "Deleted"}, previous.wide, previous.created)

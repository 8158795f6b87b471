"""``vcbus get jobs|podgroups|pods|nodes|queues``: tables, ``-o wide|json|yaml``, ``--watch``.

State is read from the status topics (newest record per key, ``vcbus.services.cli.status_store``).
Only the topics a kind needs are read, and ``get jobs NAME`` reads that job's partition
only. ``--watch`` prints the listing, then one line (or object) per change, as kubectl does,
until interrupted. As with kubectl, namespaced kinds are listed in ``default`` unless
``-n`` names another or ``-A`` asks for all; jobs and PodGroups have an AGE column, and
``-o wide`` adds columns (a job's queue, priority class and nodes; a PodGroup's priority
and minimum resources). On a terminal, phases are coloured (not with ``NO_COLOR``).

The kinds and their rows are :mod:`vcbus.services.cli.kinds`; the listing and its formats,
:mod:`vcbus.services.cli.listing`. This module reads the topics and prints.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import signal
from collections.abc import Callable
from datetime import datetime

from vcbus.core.bus.kafka import AioKafkaBus
from vcbus.core.bus.protocol import Bus
from vcbus.core.runtime.clock import SystemClock
from vcbus.core.runtime.settings import Settings
from vcbus.core.runtime.topology import ensure_topics
from vcbus.core.views.table import format_row, render_table, widths_of
from vcbus.services.cli import EXIT_UNUSABLE, terminal
from vcbus.services.cli.kinds import ALIASES, ALL, KINDS, UNNAMED_HEADER, unnamed_rejections
from vcbus.services.cli.listing import (
    Kind,
    Query,
    Row,
    deleted_row,
    document_text,
    render,
    render_change,
)
from vcbus.services.cli.status_store import StatusReader, StatusStore, add_verbose


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``vcbus get``."""
    parser = sub.add_parser("get", help="list jobs, podgroups, pods, nodes or queues (or all)")
    parser.add_argument("kind", choices=sorted([*KINDS, *ALIASES, "all"]), metavar="KIND")
    parser.add_argument("names", nargs="*", metavar="NAME", help="only these (name or ns/name)")
    add_list_arguments(parser)
    parser.set_defaults(func=run)


def add_list_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options of a listing: namespace, output format, watch, verbose."""
    parser.add_argument("-n", "--namespace", help="only this namespace (default: default)")
    parser.add_argument("-A", "--all-namespaces", action="store_true", help="list every namespace")
    parser.add_argument(
        "-o", "--output", choices=("table", "wide", "json", "yaml"), default="table"
    )
    parser.add_argument(
        "-w", "--watch", action="store_true", help="after the listing, print every change"
    )
    add_verbose(parser)


def run(args: argparse.Namespace) -> int:
    """List (and with ``--watch`` follow) the things asked for; 0 unless reading failed."""
    namespace = None if args.all_namespaces else (args.namespace or "default")
    query = Query(tuple(args.names), namespace)
    settings = Settings.from_env()
    bus = AioKafkaBus(settings.kafka)
    if args.kind == "all":
        if args.watch or args.names:
            terminal.error(
                "vcbus get all: lists every job, podgroup and pod; no NAME, no --watch\n"
            )
            return EXIT_UNUSABLE
        text = asyncio.run(get_all(bus, settings, query, args.output, terminal.colours_on()))
        if text:
            terminal.write_escaped(text)
        else:
            terminal.error("No resources found\n")
        return 0
    kind = KINDS[ALIASES.get(args.kind, args.kind)]
    return asyncio.run(
        get(
            bus,
            settings,
            kind,
            query,
            output=args.output,
            watch=args.watch,
            verbose=args.verbose,
            colour=terminal.colours_on(),
        )
    )


async def get(
    bus: Bus,
    settings: Settings,
    kind: Kind,
    query: Query,
    *,
    output: str = "table",
    watch: bool = False,
    stop: asyncio.Event | None = None,
    write: Callable[[str], object] | None = None,
    verbose: int = 0,
    colour: bool = False,
    clock: Callable[[], datetime] | None = None,
) -> int:
    """Print the listing of ``kind``; with ``watch``, then every change until ``stop``.

    Args:
        bus: the bus to read.
        settings: the topic prefix and partitions.
        kind: what to list.
        query: which ones.
        output: ``table``, ``wide``, ``json`` or ``yaml``.
        watch: keep printing changes after the listing.
        stop: set to end a watch (SIGINT and SIGTERM set it when not given).
        write: where text goes, control characters escaped already (standard output when
            not given).
        verbose: at 1 and more, say how many records were skipped (after the listing).
        colour: colour the state column.
        clock: the time ages are counted to (the system's when not given).

    Returns:
        The exit status.
    """
    out = write or terminal.write_escaped
    now = clock or SystemClock().now
    table = output in ("table", "wide")
    topics = (*kind.topics, *(kind.wide_topics if output == "wide" else ()))

    await ensure_topics(bus, [], settings.topic_prefix, settings.partitions, settings.topics)
    key = query.job_key() if kind.job_keyed else None
    keys = [key] if key is not None else None
    store = StatusStore(settings.topic_prefix, now=now)
    async with StatusReader(bus, settings.topic_prefix, topics, keys=keys) as reader:
        await reader.catch_up(store)
        rows = kind.rows(store, query)
        if watch and not table:
            text = "".join(render_change(kind, row, output, ()) for row in rows.values())
        else:
            text = render(kind, rows, output, now=now(), colour=colour)
            if kind.name == "jobs" and not watch:
                text = with_unnamed(text, rows, store, query, output=output, now=now())
        if text:
            out(text)
        elif not watch:
            terminal.error("No resources found\n")
        store.report_skipped(verbose)
        if not watch:
            return 0
        header = kind.header_of(output)
        at = now()
        widths = widths_of(header, [kind.cells_of(r, output, at) for r in rows.values()])
        if stop is None:
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for signum in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(signum, stop.set)
        if not rows and table:
            out(format_row(header, widths) + "\n")
        store.touched.clear()
        while not stop.is_set():
            if not await reader.poll(store) or not store.touched:
                continue
            touched, store.touched = frozenset(store.touched), set()
            for changed in watch_changes(kind, store, query, rows, touched):
                out(render_change(kind, changed, output, widths, now=now(), colour=colour))
    return 0


UNNAMED_HEADING = "Rejected records that name no job (in no namespace):"


def with_unnamed(
    text: str,
    rows: dict[str, Row],
    store: StatusStore,
    query: Query,
    *,
    output: str,
    now: datetime,
) -> str:
    """The jobs listing ``text`` and, once, the rejected records that name no job.

    They are shown under a heading of their own (JSON and YAML: ``rejectedRecords`` beside
    the items) when every namespace or ``default`` is listed and no name is asked for, as a
    Job without a namespace goes to ``default``; ``-n OTHER`` never shows them.
    """
    if query.names or query.namespace not in (None, "default"):
        return text
    unnamed = unnamed_rejections(store, now)
    if not unnamed:
        return text
    if output in ("json", "yaml"):
        items = [row.obj for row in rows.values()]
        records = [obj for _, obj in unnamed]
        listed = {"apiVersion": "v1", "kind": "List", "items": items, "rejectedRecords": records}
        return document_text(listed, output)
    table = render_table(UNNAMED_HEADER, [cells for cells, _ in unnamed])
    section = "\n".join([UNNAMED_HEADING, *table]) + "\n"
    return f"{text}\n{section}" if text else section


async def get_all(
    bus: Bus, settings: Settings, query: Query, output: str, colour: bool = False
) -> str:
    """``vcbus get all``: the jobs, PodGroups and pods, as kubectl's ``get all`` shows them.

    A table per kind, names written ``KIND/NAME``, a blank line between them; JSON and YAML
    give one ``List`` whose items say their ``kind``.
    """
    kinds = [KINDS[name] for name in ALL]
    topics = tuple(dict.fromkeys(t for kind in kinds for t in kind.topics))
    await ensure_topics(bus, [], settings.topic_prefix, settings.partitions, settings.topics)
    store = StatusStore(settings.topic_prefix)
    async with StatusReader(bus, settings.topic_prefix, topics) as reader:
        await reader.catch_up(store)
    listed = [(kind, kind.rows(store, query)) for kind in kinds]
    if output in ("json", "yaml"):
        items = {
            f"{kind.name}/{key}": Row(row.cells, {"kind": _KIND_OF[kind.name], **row.obj})
            for kind, rows in listed
            for key, row in rows.items()
        }
        return render(kinds[0], items, output)
    tables = []
    for kind, rows in listed:
        at = kind.header.index("NAME")
        named = {
            key: dataclasses.replace(
                row,
                cells=(
                    *row.cells[:at],
                    f"{_SHORT[kind.name]}/{row.cells[at]}",
                    *row.cells[at + 1 :],
                ),
            )
            for key, row in rows.items()
        }
        if named:
            tables.append(render(kind, named, output, colour=colour))
    return "\n".join(tables)


_KIND_OF = {"jobs": "Job", "podgroups": "PodGroup", "pods": "Pod"}
_SHORT = {
    "jobs": "job.batch.volcano.sh",
    "podgroups": "podgroup.scheduling.volcano.sh",
    "pods": "pod",
}


def watch_changes(
    kind: Kind, store: StatusStore, query: Query, rows: dict[str, Row], touched: frozenset[str]
) -> list[Row]:
    """The rows that changed since ``rows`` (which is brought up to date), gone ones included.

    Args:
        kind: what is listed.
        store: the store, after the records that touched ``touched``.
        query: which ones are listed.
        rows: the rows shown so far, by key; updated in place.
        touched: the keys the new records were about.

    Returns:
        The changed rows, and a ``Deleted`` row for each one gone.
    """
    scope = touched if kind.incremental else None
    now = kind.rows(store, Query(query.names, query.namespace, scope))
    keys = touched if scope is not None else frozenset(rows) | frozenset(now)
    changed: list[Row] = []
    for key in sorted(keys):
        before, after = rows.get(key), now.get(key)
        if after is not None and after != before:
            rows[key] = after
            changed.append(after)
        elif after is None and before is not None:
            del rows[key]
            changed.append(deleted_row(kind, before))
    return changed

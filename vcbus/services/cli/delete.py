"""``vcbus delete job NAME... | --all | -f FILE``: ask for jobs to be deleted, with their pods.

Only jobs that exist (read from ``jobs.admitted`` and ``jobs.status``), or whose rejection
(``jobs.rejected``) is what ``get jobs`` shows of them, are asked for; each other one is
reported "not found" (exit 1), as kubectl does. A rejected job's delete ends its listing:
the job-controller answers a delete of a job it does not hold with ``JobDeleted`` too. As
kubectl's, ``--all`` takes every job of the namespace (``-A``: of every namespace),
``--field-selector`` narrows it (``status.phase=Completed``, ``status.phase!=Running``,
``metadata.name=...``, ``metadata.namespace=...``, comma-separated, all must hold), ``-f
FILE`` takes the jobs a manifest file names, and ``--rejected`` the rejected records that
named no job (:mod:`vcbus.services.cli.clear_rejected`).

A ``JobDeleteRequested`` command goes to ``jobs.submitted`` keyed by the job, so it stays
ordered with the job's submission; admission passes it on and the job-controller deletes
the pods, the PodGroup and the job (``JobDeleted`` on ``jobs.status``). The command
continues the job's trace (:mod:`vcbus.services.cli.commands`), so the deletion is seen in the
same trace as the job's life; ``--wait`` follows that trace until the job is gone.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from opentelemetry.context import Context

from vcbus.contracts import JobDeleted, JobDeleteRequested, JobStatusChanged, Topic
from vcbus.contracts.keys import job_key
from vcbus.core.bus.kafka import AioKafkaBus
from vcbus.core.bus.protocol import Bus
from vcbus.core.bus.records import OutRecord, Record
from vcbus.core.runtime.clock import SystemClock
from vcbus.core.runtime.settings import Settings
from vcbus.core.runtime.topology import ensure_topics
from vcbus.core.tracing.setup import configure_tracing, shutdown_tracing
from vcbus.services.admission import load_yaml
from vcbus.services.cli import clear_rejected, terminal
from vcbus.services.cli.commands import command_record, existing, exists, is_rejected
from vcbus.services.cli.status_store import (
    StatusReader,
    StatusStore,
    add_verbose,
    read_store,
    trace_id_of,
)
from vcbus.services.cli.submit import publish


def delete_record(
    key: str, prefix: str, now: datetime, parent: Context | None = None
) -> tuple[OutRecord, str]:
    """The command deleting job ``key``, and the trace id it travels in.

    With ``parent`` (the context of the job's newest record) it continues the job's trace;
    see :func:`vcbus.services.cli.commands.command_record`.
    """
    return command_record(JobDeleteRequested, key, prefix, now, parent)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``vcbus delete``."""
    parser = sub.add_parser("delete", help="delete jobs (and their pods)")
    parser.add_argument("kind", nargs="?", choices=("job", "jobs", "vcjob"), metavar="KIND")
    parser.add_argument("names", nargs="*", metavar="NAME", help="name or namespace/name")
    parser.add_argument("-n", "--namespace", default="default")
    parser.add_argument(
        "-A", "--all-namespaces", action="store_true", help="--all: in every namespace"
    )
    parser.add_argument("--all", action="store_true", help="every job of the namespace")
    parser.add_argument(
        "--field-selector",
        type=field_selector,
        default=(),
        metavar="SELECTOR",
        help="with --all: status.phase=Completed, status.phase!=Running, metadata.name=...",
    )
    parser.add_argument("-f", "--filename", help="delete the jobs this manifest file names")
    parser.add_argument(
        "--rejected",
        action="store_true",
        help="the rejected records that named no job (get jobs lists them by origin)",
    )
    parser.add_argument(
        "--origin",
        action="append",
        type=clear_rejected.origin_arg,
        metavar="TOPIC/PARTITION:OFFSET",
        help="with --rejected: only the record read there (repeatable)",
    )
    parser.add_argument("--wait", action="store_true", help="wait until the jobs are gone")
    parser.add_argument(
        "--timeout", type=float, default=120.0, help="--wait: give up after this many seconds"
    )
    add_verbose(parser)
    parser.set_defaults(func=run)


@dataclass(frozen=True, slots=True)
class Requirement:
    """One term of a field selector: ``field=value`` or ``field!=value``."""

    field: str
    value: str
    equal: bool = True

    def holds(self, fields: dict[str, str]) -> bool:
        """Whether the job whose fields are ``fields`` meets it."""
        return (fields.get(self.field, "") == self.value) == self.equal


SELECTABLE = ("status.phase", "metadata.name", "metadata.namespace")
"""The job fields ``--field-selector`` reads, as kubectl's for jobs."""


def field_selector(text: str) -> tuple[Requirement, ...]:
    """Parse ``status.phase=Completed,metadata.name!=x`` as kubectl does.

    Raises:
        argparse.ArgumentTypeError: a term is not ``field=value``/``field!=value`` of a
            field in :data:`SELECTABLE`.
    """
    out: list[Requirement] = []
    for term in filter(None, (part.strip() for part in text.split(","))):
        field, unequal, value = term.partition("!=")
        if not unequal:
            field, _, value = term.replace("==", "=", 1).partition("=")
            if field == term:
                raise argparse.ArgumentTypeError(f"{term!r} is not field=value or field!=value")
        if field.strip() not in SELECTABLE:
            raise argparse.ArgumentTypeError(
                f'field label "{field.strip()}" not supported for jobs; '
                f"one of {', '.join(SELECTABLE)}"
            )
        out.append(Requirement(field.strip(), value.strip(), equal=not unequal))
    return tuple(out)


def selected(
    store: StatusStore, namespace: str | None, selector: Sequence[Requirement]
) -> list[str]:
    """The jobs that exist in ``namespace`` (None: every one) and meet every requirement."""
    out = []
    named_rejections = {key for key in store.keys(Topic.JOBS_REJECTED) if "/" in key}
    every = set(store.keys(Topic.JOBS_ADMITTED)) | set(store.keys(Topic.JOBS_STATUS))
    for key in sorted(every | named_rejections):
        rejected = is_rejected(store, key)
        if not rejected and not exists(store, key):
            continue
        space, _, name = key.partition("/")
        status = store.get(Topic.JOBS_STATUS, key)
        if rejected:
            phase = "Rejected"
        else:
            phase = str(status.phase) if isinstance(status, JobStatusChanged) else ""
        fields = {"status.phase": phase, "metadata.name": name, "metadata.namespace": space}
        if (namespace is None or space == namespace) and all(r.holds(fields) for r in selector):
            out.append(key)
    return out


def named_in(path: str, namespace: str) -> list[str]:
    """The keys of the jobs a manifest file names (``metadata.namespace``/``metadata.name``).

    Raises:
        ValueError: the file is not YAML or JSON, or a job in it has no name.
    """
    text = Path(path).read_text(encoding="utf-8")
    keys = []
    for number, document in enumerate(load_yaml(text, max_chars=len(text.encode())), start=1):
        if not isinstance(document, dict) or document.get("kind") != "Job":
            continue
        metadata = document.get("metadata")
        name = metadata.get("name") if isinstance(metadata, dict) else None
        if not isinstance(name, str) or not name:
            raise ValueError(f"{path}: job document {number} has no metadata.name")
        space = metadata.get("namespace") if isinstance(metadata, dict) else None
        keys.append(str(job_key(space if isinstance(space, str) and space else namespace, name)))
    return keys


def _usage_error(args: argparse.Namespace) -> str | None:
    ways = sum((bool(args.names), args.all, args.filename is not None, args.rejected))
    if ways != 1:
        return "give job names, --all, -f FILE, or --rejected (one of them)"
    if args.origin and not args.rejected:
        return "--origin selects among --rejected"
    if args.rejected:
        return "--wait takes jobs" if args.wait else None
    if args.field_selector and not args.all:
        return "--field-selector selects among --all"
    if args.all_namespaces and not args.all:
        return "-A takes --all"
    if args.filename is None and args.kind is None:
        return "give the kind: vcbus delete job NAME"
    return None


def run(args: argparse.Namespace) -> int:
    """Publish the delete commands of the jobs that exist.

    Returns:
        0 once published (with ``--wait``: once every job is gone), 1 when a job does not
        exist (said on standard error, as kubectl does; the others are deleted all the
        same) or none is selected, 2 when the line cannot be used or ``--wait`` ran out.
    """
    if (usage := _usage_error(args)) is not None:
        terminal.error(f"vcbus delete: {usage}\n")
        return 2
    if args.rejected:
        return clear_rejected.run(args)
    settings = Settings.from_env()
    bus = AioKafkaBus(settings.kafka)
    keys: list[str]
    if args.all:
        store = asyncio.run(
            read_store(
                bus,
                settings,
                (Topic.JOBS_ADMITTED, Topic.JOBS_STATUS, Topic.JOBS_REJECTED),
                verbose=args.verbose,
            )
        )
        namespace = None if args.all_namespaces else args.namespace
        keys = selected(store, namespace, args.field_selector)
        if not keys:
            terminal.error("No resources found\n")
            return 0
    elif args.filename is not None:
        keys = named_in(args.filename, args.namespace)
    else:
        keys = [name if "/" in name else f"{args.namespace}/{name}" for name in args.names]
    keys = list(dict.fromkeys(keys))
    found = asyncio.run(existing(bus, settings, keys, verbose=args.verbose, rejected=True))
    missing = [key for key in keys if key not in found]
    terminal.error("".join(f'vcbus delete: job "{key}" not found\n' for key in missing))
    keys = [key for key in keys if key in found]
    if not keys:
        return 1
    configure_tracing("vcbus-cli")
    try:
        now = SystemClock().now()
        made = {key: delete_record(key, settings.topic_prefix, now, found[key]) for key in keys}
        asyncio.run(publish(settings, [record for record, _ in made.values()]))
    finally:
        shutdown_tracing()
    terminal.write("".join(f"job {key} delete requested\n" for key in keys))
    status = 0
    if args.wait:
        traces = {key: trace for key, (_, trace) in made.items()}
        status = asyncio.run(
            wait_for_deleted(bus, settings, traces, timeout=args.timeout, verbose=args.verbose)
        )
    return status or (1 if missing else 0)


async def wait_for_deleted(
    bus: Bus, settings: Settings, traces: dict[str, str], *, timeout: float, verbose: int = 0
) -> int:
    """Wait until every job has its ``JobDeleted`` in its delete command's trace.

    Args:
        bus: the bus to read.
        settings: the topic prefix and partitions.
        traces: the trace id of each delete command, by job key.
        timeout: seconds to wait at most.
        verbose: at 1 and more, say how many records were skipped (at the end).

    Returns:
        0 once every job is deleted, 2 when the time ran out first.
    """
    clock = SystemClock()
    deadline = clock.monotonic() + timeout
    store = StatusStore(settings.topic_prefix)

    def accept(record: Record) -> bool:
        key = record.key.decode("utf-8", "replace") if record.key else ""
        return key in traces and trace_id_of(record) == traces[key]

    await ensure_topics(bus, [], settings.topic_prefix, settings.partitions, settings.topics)
    async with StatusReader(
        bus, settings.topic_prefix, (Topic.JOBS_STATUS,), keys=list(traces), accept=accept
    ) as reader:
        done: set[str] = set()
        while clock.monotonic() <= deadline:
            await reader.poll(store, timeout=0.2)
            for key in sorted(set(traces) - done):
                if isinstance(store.get(Topic.JOBS_STATUS, key), JobDeleted):
                    done.add(key)
                    terminal.write(f"job {key} deleted\n")
            if done == set(traces):
                break
    store.report_skipped(verbose)
    return 0 if done == set(traces) else 2

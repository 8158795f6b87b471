"""``vcbus delete job NAME...``: ask for jobs to be deleted, with their pods.

Only jobs that exist (read from ``jobs.admitted`` and ``jobs.status``) are asked for; each
other one is reported "not found" (exit 1), as kubectl does.

A ``JobDeleteRequested`` command goes to ``jobs.submitted`` keyed by the job, so it stays
ordered with the job's submission; admission passes it on and the job-controller deletes
the pods, the PodGroup and the job (``JobDeleted`` on ``jobs.status``). The command
continues the job's trace (:mod:`services.cli.commands`), so the deletion is seen in the
same trace as the job's life; ``--wait`` follows that trace until the job is gone.
"""

from __future__ import annotations

import argparse
import asyncio
from datetime import datetime

from opentelemetry.context import Context

from contracts import JobDeleted, JobDeleteRequested, Topic
from services.cli import terminal
from services.cli.commands import command_record, existing
from services.cli.status import StatusReader, StatusStore, add_verbose, trace_id_of
from services.cli.submit import publish
from shared.bus.kafka import AioKafkaBus
from shared.bus.protocol import Bus
from shared.bus.records import OutRecord, Record
from shared.runtime.clock import SystemClock
from shared.runtime.settings import Settings
from shared.runtime.topology import ensure_topics
from shared.tracing.setup import configure_tracing, shutdown_tracing


def delete_record(
    key: str, prefix: str, now: datetime, parent: Context | None = None
) -> tuple[OutRecord, str]:
    """The command deleting job ``key``, and the trace id it travels in.

    With ``parent`` (the context of the job's newest record) it continues the job's trace;
    see :func:`services.cli.commands.command_record`.
    """
    return command_record(JobDeleteRequested, key, prefix, now, parent)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``vcbus delete``."""
    parser = sub.add_parser("delete", help="delete jobs (and their pods)")
    parser.add_argument("kind", choices=("job", "jobs", "vcjob"), metavar="KIND", help="job")
    parser.add_argument("names", nargs="+", metavar="NAME", help="name or namespace/name")
    parser.add_argument("-n", "--namespace", default="default")
    parser.add_argument("--wait", action="store_true", help="wait until the jobs are gone")
    parser.add_argument(
        "--timeout", type=float, default=120.0, help="--wait: give up after this many seconds"
    )
    add_verbose(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Publish the delete commands of the jobs that exist.

    Returns:
        0 once published (with ``--wait``: once every job is gone), 1 when a job does not
        exist (said on standard error, as kubectl does; the others are deleted all the
        same), 2 when ``--wait`` ran out of time.
    """
    keys = list(
        dict.fromkeys(name if "/" in name else f"{args.namespace}/{name}" for name in args.names)
    )
    settings = Settings.from_env()
    bus = AioKafkaBus(settings.kafka)
    found = asyncio.run(existing(bus, settings, keys, verbose=args.verbose))
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

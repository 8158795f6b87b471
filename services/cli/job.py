"""``vcbus job suspend|resume|list|view``: vcctl's job verbs.

Ported from volcano@v1.10 ``pkg/cli/job`` (``suspend.go``, ``resume.go``, ``list.go``,
``view.go``, and ``util.go`` ``createJobCommand``): ``suspend`` asks for Volcano's
``AbortJob`` and ``resume`` for ``ResumeJob``, as a command on ``jobs.submitted`` keyed by
the job (``JobAbortRequested`` / ``JobResumeRequested``, Volcano's ``bus.volcano.sh``
Command); admission checks it and the job-controller runs it as a ``CommandIssued``
request (SPEC B2.2: an Aborting or Aborted job resumed restarts, ``retryCount+1``).
``list`` and ``view`` are ``get jobs`` and ``describe job``.

Unlike vcctl, a command for a job vcbus does not know is refused here (exit 1) rather
than left for the controller to ignore. The command continues the job's trace.
"""

from __future__ import annotations

import argparse
import asyncio
from datetime import datetime

from opentelemetry.context import Context

from contracts import (
    JobAbortRequested,
    JobDeleteRequested,
    JobKey,
    JobResumeRequested,
    JobStatusChanged,
    Topic,
    derive_event_id,
)
from services.cli import describe, get, terminal
from services.cli.status import add_verbose, read_store
from services.cli.submit import publish
from shared.bus.kafka import AioKafkaBus
from shared.bus.outbox import event_record
from shared.bus.protocol import Bus
from shared.bus.records import OutRecord
from shared.runtime.clock import SystemClock
from shared.runtime.settings import Settings
from shared.tracing.setup import configure_tracing, shutdown_tracing
from shared.tracing.spans import business_span, context_of, current_trace_id, job_span

JobCommand = JobDeleteRequested | JobAbortRequested | JobResumeRequested

VERBS: dict[str, tuple[type[JobAbortRequested | JobResumeRequested], str]] = {
    "suspend": (JobAbortRequested, "abort the job (AbortJob): kill its pods, keep finished ones"),
    "resume": (JobResumeRequested, "resume a suspended job (ResumeJob): restart it"),
}


def command_record(
    command: type[JobCommand], key: str, prefix: str, now: datetime, parent: Context | None
) -> tuple[OutRecord, str]:
    """The command ``command`` for job ``key``, and the trace id it travels in.

    The event id derives from the command, the job and the time of asking: asking again
    later is a new command, a retry of the same publish is not. With ``parent`` (the
    context of the job's newest status) the command continues the job's trace.
    """
    tag = str(command.__struct_config__.tag)
    event = command(
        event_id=derive_event_id(tag, key, now.isoformat()), occurred_at=now, job=JobKey(key)
    )
    name = f"cli.{tag.split('.')[1].removesuffix('_requested')}"
    span = business_span(name, job=key) if parent is None else job_span(name, parent, job=key)
    with span:
        record = event_record(event, prefix)
        trace_id = current_trace_id()
    return record, trace_id


async def job_contexts(
    bus: Bus, settings: Settings, keys: list[str], *, verbose: int = 0
) -> dict[str, Context]:
    """The trace context of the newest status of each known job among ``keys``.

    A job is known while its newest ``jobs.status`` record is a ``JobStatusChanged`` (not
    deleted); the others are left out.
    """
    store = await read_store(bus, settings, (Topic.JOBS_STATUS,), keys=keys, verbose=verbose)
    known: dict[str, Context] = {}
    for key in keys:
        if isinstance(store.get(Topic.JOBS_STATUS, key), JobStatusChanged):
            known[key] = context_of(store.latest[Topic.JOBS_STATUS][key].headers)
    return known


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``vcbus job``."""
    parser = sub.add_parser("job", help="vcctl's job verbs: suspend, resume, list, view")
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    for verb, (command, text) in VERBS.items():
        change = verbs.add_parser(verb, help=text)
        change.add_argument("name", metavar="NAME", help="name or namespace/name")
        change.add_argument("-n", "--namespace", default="default")
        add_verbose(change)
        change.set_defaults(func=run, command_type=command)
    listing = verbs.add_parser("list", help="list jobs (as vcbus get jobs)")
    get.add_list_arguments(listing)
    listing.set_defaults(func=get.run, kind="jobs", names=[])
    view = verbs.add_parser("view", help="show one job (as vcbus describe job)")
    describe.add_arguments(view)
    view.set_defaults(func=describe.run, kind="job")


def run(args: argparse.Namespace) -> int:
    """Publish the command; 1 when vcbus knows no such job."""
    key = args.name if "/" in args.name else f"{args.namespace}/{args.name}"
    settings = Settings.from_env()
    bus = AioKafkaBus(settings.kafka)
    contexts = asyncio.run(job_contexts(bus, settings, [key], verbose=args.verbose))
    if key not in contexts:
        terminal.error(f'job "{key}" not found\n')
        return 1
    configure_tracing("vcbus-cli")
    try:
        now = SystemClock().now()
        record, trace_id = command_record(
            args.command_type, key, settings.topic_prefix, now, contexts[key]
        )
        asyncio.run(publish(settings, [record]))
    finally:
        shutdown_tracing()
    terminal.write(f"job {key} {args.verb} requested trace_id={trace_id}\n")
    return 0

"""``vcbus job suspend|resume|list|view``: vcctl's job verbs.

Ported from volcano@v1.10 ``pkg/cli/job`` (``suspend.go``, ``resume.go``, ``list.go``,
``view.go``, and ``util.go`` ``createJobCommand``): ``suspend`` asks for Volcano's
``AbortJob`` and ``resume`` for ``ResumeJob``, as a command on ``jobs.submitted`` keyed by
the job (``JobAbortRequested`` / ``JobResumeRequested``, Volcano's ``bus.volcano.sh``
Command); admission checks it and the job-controller runs it as a ``CommandIssued``
request (Volcano's state/: an Aborting or Aborted job resumed restarts, ``retryCount+1``).
``list`` and ``view`` are ``get jobs`` and ``describe job``.

Unlike vcctl, a command for a job vcbus does not know is refused here (exit 1), as
``vcbus delete`` refuses it, rather than left for the controller to ignore. The command
continues the job's trace (:mod:`vcbus.services.cli.commands`).
"""

from __future__ import annotations

import argparse
import asyncio

from vcbus.contracts import JobAbortRequested, JobResumeRequested
from vcbus.core.bus.kafka import AioKafkaBus
from vcbus.core.runtime.clock import SystemClock
from vcbus.core.runtime.settings import Settings
from vcbus.core.tracing.setup import configure_tracing, shutdown_tracing
from vcbus.services.cli import describe, get, terminal
from vcbus.services.cli.commands import command_record, existing
from vcbus.services.cli.status_store import add_verbose
from vcbus.services.cli.submit import publish

VERBS: dict[str, tuple[type[JobAbortRequested | JobResumeRequested], str]] = {
    "suspend": (JobAbortRequested, "abort the job (AbortJob): kill its pods, keep finished ones"),
    "resume": (JobResumeRequested, "resume a suspended job (ResumeJob): restart it"),
}


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
    found = asyncio.run(existing(bus, settings, [key], verbose=args.verbose))
    if key not in found:
        terminal.error(f'vcbus job {args.verb}: job "{key}" not found\n')
        return 1
    configure_tracing("vcbus-cli")
    try:
        now = SystemClock().now()
        record, trace_id = command_record(
            args.command_type, key, settings.topic_prefix, now, found[key]
        )
        asyncio.run(publish(settings, [record]))
    finally:
        shutdown_tracing()
    terminal.write(f"job {key} {args.verb} requested trace_id={trace_id}\n")
    return 0

"""``vcbus delete --rejected [--origin ORIGIN]...``: remove the rejected records that named no job.

A malformed record (no readable name) is refused by admission and listed by ``get jobs``
under a heading of its own, by where it was read (``vcbus.jobs.submitted/0:12``). It is
no job, so ``delete job`` cannot name it: ``--rejected`` clears every one listed now, and
``--origin`` (repeated) only those read there. The command ``RejectionsClearRequested``
goes to ``jobs.submitted``; admission answers ``RejectionsCleared`` on ``jobs.rejected``,
which every reader of that topic folds (docs/design.md#junk-records). An origin that no
listed record has is reported "not found" (exit 1), as a job's name is.
"""

from __future__ import annotations

import argparse
import asyncio
import re
from datetime import datetime

from vcbus.contracts import (
    JobRejected,
    RejectionsClearRequested,
    SubmissionOrigin,
    Topic,
    derive_event_id,
    tag_of,
)
from vcbus.contracts.limits import MAX_CLEARED_ORIGINS
from vcbus.core.bus.kafka import AioKafkaBus
from vcbus.core.bus.outbox import event_record
from vcbus.core.bus.records import OutRecord
from vcbus.core.runtime.clock import SystemClock
from vcbus.core.runtime.settings import Settings
from vcbus.core.tracing.setup import configure_tracing, shutdown_tracing
from vcbus.core.tracing.spans import business_span
from vcbus.services.cli import terminal
from vcbus.services.cli.status_store import UNNAMED, StatusStore, read_store
from vcbus.services.cli.submit import publish

_ORIGIN = re.compile(r"^(?P<topic>[^/\s]+)/(?P<partition>[0-9]{1,9}):(?P<offset>[0-9]{1,18})$")


def origin_arg(text: str) -> SubmissionOrigin:
    """Parse ``TOPIC/PARTITION:OFFSET``, as ``get jobs`` shows a record that named no job.

    Raises:
        argparse.ArgumentTypeError: it is not of that form.
    """
    match = _ORIGIN.match(text.strip())
    if match is None:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an origin TOPIC/PARTITION:OFFSET (vcbus.jobs.submitted/0:12)"
        )
    return SubmissionOrigin(
        topic=match["topic"], partition=int(match["partition"]), offset=int(match["offset"])
    )


def origin_text(origin: SubmissionOrigin) -> str:
    """How ``get jobs`` and this command name an origin."""
    return f"{origin.topic}/{origin.partition}:{origin.offset}"


def listed(store: StatusStore) -> list[SubmissionOrigin]:
    """The origins of the rejected records that name no job, as listed now."""
    out = []
    for key, record in store.latest[Topic.JOBS_REJECTED].items():
        rejected = store.decode(Topic.JOBS_REJECTED, record.value)
        if key.startswith(UNNAMED) and isinstance(rejected, JobRejected) and rejected.origin:
            out.append(rejected.origin)
    return out


def clear_record(origins: tuple[SubmissionOrigin, ...], prefix: str, now: datetime) -> OutRecord:
    """The command clearing ``origins`` (none: every rejected record that named no job)."""
    tag = tag_of(RejectionsClearRequested)
    named = ",".join(origin_text(origin) for origin in origins)
    event = RejectionsClearRequested(
        event_id=derive_event_id(tag, named, now.isoformat()), occurred_at=now, origins=origins
    )
    with business_span("cli.clear_rejected"):
        return event_record(event, prefix)


def run(args: argparse.Namespace) -> int:
    """Publish the clear of the rejected records asked for.

    Returns:
        0 once published (or when none is listed), 1 when an origin names no listed record
        (the others are cleared all the same), 2 when too many origins are given.
    """
    wanted = tuple(dict.fromkeys(args.origin or ()))
    if len(wanted) > MAX_CLEARED_ORIGINS:
        terminal.error(f"vcbus delete: at most {MAX_CLEARED_ORIGINS} origins at once\n")
        return 2
    settings = Settings.from_env()
    bus = AioKafkaBus(settings.kafka)
    store = asyncio.run(read_store(bus, settings, (Topic.JOBS_REJECTED,), verbose=args.verbose))
    shown = set(listed(store))
    missing = [origin for origin in wanted if origin not in shown]
    terminal.error(
        "".join(f'vcbus delete: rejected record "{origin_text(o)}" not found\n' for o in missing)
    )
    origins = tuple(origin for origin in wanted if origin in shown)
    if wanted and not origins:
        return 1
    if not shown:
        terminal.error("No resources found\n")
        return 0
    configure_tracing("vcbus-cli")
    try:
        record = clear_record(origins, settings.topic_prefix, SystemClock().now())
        asyncio.run(publish(settings, [record]))
    finally:
        shutdown_tracing()
    cleared = origins or tuple(sorted(shown, key=lambda o: (o.topic, o.partition, o.offset)))
    terminal.write("".join(f"rejected record {origin_text(o)} delete requested\n" for o in cleared))
    return 1 if missing else 0

"""``vcbus submit FILE``: publish Jobs and Queues; each job's trace starts here.

Every document that is not a Volcano Queue is published to ``jobs.submitted`` as JSON text,
keyed ``namespace/name``; admission answers each on ``jobs.admitted`` or ``jobs.rejected``
(so a Deployment sent by mistake gets its "not a Job" answer there too). A file that is
not YAML or JSON at all is published as it is, and rejected with the parser's reason. The
records are :mod:`vcbus.services.submission`'s, the same for ``up`` and ``simulate``.

``--wait`` then follows each job until it is Running or finished, showing its progress:
the records of the submission's own trace on the jobs' partitions of ``jobs.status``,
``jobs.rejected`` and ``podgroups.status``, and on each topic every later record of the job
(so an older life of the same job name is not taken for this one). A resubmission that
changes nothing makes no new status; once its admission is seen, the job's current status
stands for it.

Before publishing, ``submit`` reads the current state of each job it names and says what
the submission will do: ``created``, ``unchanged``, ``updated (FIELDS)``, or, for an update
the job-controller would refuse (:func:`vcbus.core.job_update.update_error`, Volcano's rule
and message), the refusal, and nothing is published (exit 1).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from vcbus.contracts import (
    JobAdmitted,
    JobDeleted,
    JobRejected,
    JobStatusChanged,
    QueueDeclared,
    Topic,
)
from vcbus.contracts.objects import JobPhase
from vcbus.core.bus.kafka import AioKafkaBus
from vcbus.core.bus.protocol import Bus
from vcbus.core.bus.records import OutRecord, Record, oversized
from vcbus.core.job_update import (
    NO_PODS,
    UPDATE_REJECTED,
    changed_fields,
    creation_error,
    update_error,
)
from vcbus.core.reasons import INFEASIBLE, QUEUE_CLOSED, QUEUE_NOT_FOUND
from vcbus.core.runtime.clock import SystemClock
from vcbus.core.runtime.settings import Settings
from vcbus.core.runtime.topology import ensure_topics
from vcbus.core.tracing.setup import configure_tracing, shutdown_tracing
from vcbus.core.views.jobs import pod_counts
from vcbus.core.views.phases import FAILED_PHASES
from vcbus.core.views.read_model import JOB_TOPICS
from vcbus.services.admission import FieldValidation
from vcbus.services.cli import require_broker, terminal
from vcbus.services.cli.admissible import never_admitted
from vcbus.services.cli.admit import VALIDATE_CHOICES, Verdict, add_validate, admit, as_text
from vcbus.services.cli.status_store import (
    StatusReader,
    StatusStore,
    add_verbose,
    podgroup_phase_of,
    read_store,
    reason_of,
    trace_id_of,
)
from vcbus.services.submission import Submitted, records_for


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``vcbus submit``."""
    parser = sub.add_parser("submit", help="publish Volcano Jobs (and Queues) from a file or stdin")
    parser.add_argument(
        "file",
        nargs="+",
        type=read_input,
        help="YAML (multi-document), JSON, or - for stdin; several files: all or none is sent",
    )
    parser.add_argument(
        "--wait", action="store_true", help="show progress until every job runs or finishes"
    )
    parser.add_argument(
        "--timeout", type=float, default=300.0, help="--wait: give up after this many seconds"
    )
    add_verbose(parser)
    add_validate(parser)
    parser.set_defaults(func=run)


def read_input(name: str) -> tuple[str, str]:
    """The name and text of the file (``-``: standard input), read before anything else.

    Raises:
        argparse.ArgumentTypeError: it cannot be read, or is not UTF-8 text.
    """
    try:
        return name, sys.stdin.read() if name == "-" else Path(name).read_text(encoding="utf-8")
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"cannot read {name}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise argparse.ArgumentTypeError(f"{name} is not UTF-8 text ({exc.reason})") from None


def run(args: argparse.Namespace) -> int:
    """Check the file's jobs as admission would, publish them, print each key and trace id.

    Nothing is published when the file holds no document, when a document's record would
    be over the broker's limit (1 MiB), or when admission's validation, run here first,
    refuses a job: its violations are printed (exit 1). The admission service still
    decides; this check only saves a round trip.

    With ``--wait``: 0 when every job runs or completed, 1 when one was rejected or
    failed, 2 when the time ran out first.
    """
    settings = Settings.from_env()
    fields = VALIDATE_CHOICES[args.validate]
    configure_tracing("vcbus-cli")
    try:
        now = SystemClock().now()
        files = [
            (name, records_for(text, settings.topic_prefix, now, fields))
            for name, text in args.file
        ]
        submitted = [item for _, items in files for item in items]
        refusal = "".join(_unsendable(name, items, settings) for name, items in files)
        answers: dict[str, str] = {}
        if not refusal:
            require_broker(settings)
            store = asyncio.run(_current(settings, _job_keys(submitted, settings)))
            verdicts = check(submitted, settings, fields, store=store)
            where = ", ".join(_where(name) for name, _ in files)
            refusal = _refused(where, verdicts)
            if not refusal:
                answers, refusal = answers_for(store, verdicts, where)
            if not refusal:
                warned: list[Verdict | Submitted] = [*verdicts, *submitted]
                terminal.error(
                    "".join(
                        f"Warning: {item.label}: {warning}\n"
                        for item in warned
                        for warning in item.warnings
                    )
                )
        if refusal:
            # nothing is published: admission or the broker would refuse these
            # (docs/design.md#bounded-records)
            terminal.error(refusal)
            return 1
        asyncio.run(publish(settings, [item.record for item in submitted]))
    finally:
        shutdown_tracing()
    terminal.write("".join(_told(item, answers) for item in submitted))
    if not args.wait:
        return 0
    jobs_topic = f"{settings.topic_prefix}{Topic.JOBS_SUBMITTED}"
    traces = {
        item.label: item.trace_id
        for item in submitted
        if item.record.topic == jobs_topic and item.label and item.trace_id
    }
    if not traces:
        return 0
    bus = AioKafkaBus(settings.kafka)
    progress = Progress(sys.stdout, interactive=sys.stdout.isatty())
    return asyncio.run(
        wait_for_jobs(bus, settings, traces, progress, timeout=args.timeout, verbose=args.verbose)
    )


def _where(name: str) -> str:
    return "standard input" if name == "-" else name


def _unsendable(name: str, submitted: list[Submitted], settings: Settings) -> str:
    """Why the file cannot be published, known without a broker (empty: it can)."""
    if not submitted:
        return f"vcbus submit: {_where(name)} holds no Job or Queue; nothing submitted\n"
    too_large = [
        f"vcbus submit: {item.label or '(unnamed)'}: {reason}\n"
        for item in submitted
        if (reason := oversized(item.record, settings.kafka.max_record_bytes)) is not None
    ]
    return "".join(too_large)


def _refused(where: str, verdicts: list[Verdict]) -> str:
    """The violations of the documents admission would refuse (empty: none)."""
    refused = [verdict for verdict in verdicts if not verdict.allowed]
    if not refused:
        return ""
    return (
        "".join(as_text(verdict) for verdict in refused)
        + f"vcbus submit: admission would refuse {len(refused)} of {len(verdicts)} "
        f"document(s) of {where}; nothing submitted (`vcbus admit FILE` checks a file)\n"
    )


def check(
    submitted: list[Submitted],
    settings: Settings,
    fields: FieldValidation = FieldValidation.STRICT,
    *,
    store: StatusStore | None = None,
) -> list[Verdict]:
    """Admission's verdict on each document ``submitted`` publishes to ``jobs.submitted``.

    The queues are those the ``queues`` topic declares (in ``store``, read when not
    given), and those of the file.
    """
    if store is None:
        store = asyncio.run(_current(settings, []))
    queues = {
        name: event.queue
        for name in store.keys(Topic.QUEUES)
        if isinstance(event := store.get(Topic.QUEUES, name), QueueDeclared)
    }
    queues.update((item.queue.name, item.queue) for item in submitted if item.queue is not None)
    jobs_topic = f"{settings.topic_prefix}{Topic.JOBS_SUBMITTED}"
    return [
        admit(queues, item.record.value or b"", index, fields)
        for index, item in enumerate(submitted)
        if item.record.topic == jobs_topic
    ]


def _job_keys(submitted: list[Submitted], settings: Settings) -> list[str]:
    jobs_topic = f"{settings.topic_prefix}{Topic.JOBS_SUBMITTED}"
    return sorted(
        {item.label for item in submitted if item.record.topic == jobs_topic and item.label}
    )


async def _current(settings: Settings, keys: list[str]) -> StatusStore:
    """The declared queues and, of each job in ``keys``, its accepted spec and status."""
    topics = (Topic.QUEUES, Topic.JOBS_ADMITTED, Topic.JOBS_STATUS) if keys else (Topic.QUEUES,)
    return await read_store(AioKafkaBus(settings.kafka), settings, topics, keys=keys or None)


def answer(accepted: JobAdmitted | None, verdict: Verdict) -> tuple[str, str]:
    """What publishing an admitted job does to the job as it is now, or why it is refused.

    Args:
        accepted: the admission whose spec the job has (``None``: no such job).
        verdict: admission's verdict on the submitted document (allowed).

    Returns:
        ``(answer, "")`` with ``created``, ``unchanged`` or ``updated (FIELDS)``; or
        ``("", "CODE: message")``: the job-controller would refuse the update, with
        Volcano's message (:func:`vcbus.core.job_update.update_error`), or the job would
        be created with no pod (:func:`vcbus.core.job_update.creation_error`).
    """
    if verdict.job is None:
        return "created", ""
    if accepted is None:
        empty = creation_error(verdict.job)
        return ("", f"{NO_PODS}: {empty}") if empty is not None else ("created", "")
    if verdict.spec_digest == accepted.spec_digest:
        return "unchanged", ""
    error = update_error(accepted.manifest, verdict.job)
    if error is not None:
        return "", f"{UPDATE_REJECTED}: {error}"
    return f"updated ({', '.join(changed_fields(accepted.manifest, verdict.job))})", ""


def answers_for(
    store: StatusStore, verdicts: list[Verdict], where: str
) -> tuple[dict[str, str], str]:
    """Each admitted job's answer by key, and the refusals as text (empty: none)."""
    answers: dict[str, str] = {}
    refusals: list[str] = []
    for verdict in verdicts:
        if verdict.job is None or not verdict.label:
            continue
        said, refused = answer(store.accepted(verdict.label), verdict)
        if refused:
            refusals.append(f"vcbus submit: job {verdict.label}: {refused}\n")
        else:
            answers[verdict.label] = said
    if not refusals:
        return answers, ""
    return answers, "".join(refusals) + (
        f"vcbus submit: {len(refusals)} job(s) of {where} refused; nothing submitted "
        "(`vcbus delete job NAME` first to replace a job)\n"
    )


def _told(item: Submitted, answers: Mapping[str, str]) -> str:
    """The line ``submit`` prints for one published record."""
    said = answers.get(item.label)
    if said is None:
        return f"submitted {item.label or '(unnamed)'} trace_id={item.trace_id}\n"
    return f"job {item.label} {said} trace_id={item.trace_id}\n"


async def publish(settings: Settings, records: list[OutRecord]) -> None:
    """Publish ``records`` and wait for the broker's acknowledgements."""
    producer = AioKafkaBus(settings.kafka).producer(client_id="vcbus-cli")
    try:
        await producer.send(records)
    finally:
        await producer.stop()


# -- --wait -------------------------------------------------------------------------------

WAIT_TOPICS = JOB_TOPICS
"""What ``--wait`` reads: a job's topics and its PodGroup's (the read model's)."""

DONE_PHASES = frozenset({JobPhase.RUNNING, JobPhase.COMPLETING, JobPhase.COMPLETED})
"""A job in one of these phases has what ``--wait`` waits for."""

STUCK_REASONS = frozenset({QUEUE_NOT_FOUND, QUEUE_CLOSED, INFEASIBLE})
"""Reasons a pending job keeps until someone changes the cluster or its queue: waiting for
them to pass by themselves would only run out the time, so ``--wait`` stops (exit 1); so
it does for a minimum alone over its queue's capability
(:func:`vcbus.services.cli.admissible.never_admitted`)."""

UNCHANGED_GRACE = 5.0
"""Seconds after its admission a job waits for a status of its own before an unchanged
resubmission is assumed and the job's current status is taken."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """Where one job stands: a line for people, and whether waiting is over (and how)."""

    line: str
    done: bool = False
    failed: bool = False


def outcome(ours: StatusStore, current: StatusStore, key: str, *, unchanged: bool) -> Outcome:
    """Where ``key`` stands, from the records of its submission's trace (``ours``).

    Args:
        ours: the records of the submission's trace.
        current: every record of the job's partitions (for an unchanged resubmission).
        key: the job key.
        unchanged: whether the job was admitted long enough ago without a status of its own
            to take its current status.

    Returns:
        The outcome.
    """
    rejected = ours.get(Topic.JOBS_REJECTED, key)
    if isinstance(rejected, JobRejected):
        why = "; ".join(f"{v.path}: {v.message}" for v in rejected.violations)
        return Outcome(f"{key}: Rejected: {why}", done=True, failed=True)
    store = ours
    status = ours.get(Topic.JOBS_STATUS, key)
    if status is None and unchanged:
        store, status = current, current.get(Topic.JOBS_STATUS, key)
    if isinstance(status, JobDeleted):
        return Outcome(f"{key}: Deleted", done=True, failed=True)
    if not isinstance(status, JobStatusChanged):
        admitted = key in ours.latest[Topic.JOBS_ADMITTED]
        return Outcome(f"{key}: {'Admitted' if admitted else 'Submitted'}")
    parts = [f"{key}: {status.phase}"]
    if podgroup := podgroup_phase_of(store, key):
        parts.append(f"PodGroup {podgroup}")
    parts.append(pod_counts(status))
    reason = reason_of(store, key, status) if status.phase == JobPhase.PENDING else None
    if reason is not None:
        parts.append(reason.text())
    line = ", ".join(parts)
    if status.phase in DONE_PHASES:
        return Outcome(line, done=True)
    if status.phase in FAILED_PHASES:
        return Outcome(line, done=True, failed=True)
    if reason is not None and (reason.code in STUCK_REASONS or never_admitted(reason)):
        return Outcome(f"{line} (it cannot start until that changes)", done=True, failed=True)
    return Outcome(line)


class Progress:
    """Shows one line per job: rewritten in place on a terminal, appended on change otherwise.

    A line's control characters are escaped: the only ones written are Progress's own.
    """

    def __init__(self, out: TextIO, *, interactive: bool) -> None:
        self._out = out
        self._interactive = interactive
        self._shown: dict[str, str] = {}

    def show(self, lines: dict[str, str]) -> None:
        """Show the current line of every job."""
        lines = {key: terminal.cell(line) for key, line in lines.items()}
        if self._interactive:
            if self._shown:
                self._out.write(f"\x1b[{len(self._shown)}F")
            self._out.write("".join(f"\x1b[2K{line}\n" for line in lines.values()))
            self._shown = dict(lines)
        else:
            for key, line in lines.items():
                if self._shown.get(key) != line:
                    self._out.write(line + "\n")
                    self._shown[key] = line
        self._out.flush()


async def wait_for_jobs(
    bus: Bus,
    settings: Settings,
    traces: Mapping[str, str],
    progress: Progress,
    *,
    timeout: float,
    verbose: int = 0,
) -> int:
    """Follow the submitted jobs until each runs or finishes, showing their progress.

    Args:
        bus: the bus to read.
        settings: the topic prefix and partitions.
        traces: the trace id of each submitted job's submission, by job key.
        progress: where progress is shown.
        timeout: seconds to wait at most.
        verbose: at 1 and more, say how many records were skipped (at the end).

    Returns:
        0 when every job runs or completed, 1 when one was rejected or failed, 2 on timeout.
    """
    clock = SystemClock()
    deadline = clock.monotonic() + timeout
    ours, current = StatusStore(settings.topic_prefix), StatusStore(settings.topic_prefix)
    admitted_at: dict[str, float] = {}

    started: set[tuple[str, str]] = set()

    def accept(record: Record) -> bool:
        key = record.key.decode("utf-8", "replace") if record.key else ""
        if key not in traces:
            return False
        current.fold(record)
        if trace_id_of(record) == traces[key]:
            started.add((record.topic, key))
            return True
        # after the submission's first record on a topic, later ones of the job follow it
        # (a timer's event after a restart starts a trace of its own)
        return (record.topic, key) in started

    await ensure_topics(bus, [], settings.topic_prefix, settings.partitions, settings.topics)
    async with StatusReader(
        bus, settings.topic_prefix, WAIT_TOPICS, keys=list(traces), accept=accept
    ) as reader:
        while True:
            await reader.poll(ours, timeout=0.2)
            now = clock.monotonic()
            for key in traces:
                if key in ours.latest[Topic.JOBS_ADMITTED]:
                    admitted_at.setdefault(key, now)
            outcomes = {
                key: outcome(
                    ours,
                    current,
                    key,
                    unchanged=reader.caught_up
                    and now - admitted_at.get(key, now) >= UNCHANGED_GRACE,
                )
                for key in traces
            }
            progress.show({key: o.line for key, o in outcomes.items()})
            if all(o.done for o in outcomes.values()):
                status = 1 if any(o.failed for o in outcomes.values()) else 0
                break
            if now > deadline:
                waiting = sorted(key for key, o in outcomes.items() if not o.done)
                terminal.error(
                    f"vcbus submit: --wait: {len(waiting)} job(s) not running after "
                    f"{timeout:g} s: {', '.join(waiting)} (`vcbus describe job NAME` says why)\n"
                )
                status = 2
                break
    current.report_skipped(verbose)
    return status

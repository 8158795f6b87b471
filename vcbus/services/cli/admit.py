"""``vcbus admit FILE``: run admission alone on Jobs in a file and print the verdicts.

docs/design.md#scenarios: ``vcbus admit FILE [--queues FILE] [--json] [--validate
strict|warn|ignore]``. FILE (``-`` = stdin) holds one Job, several YAML documents, or a JSON list;
each document goes through the admission core (:func:`vcbus.services.admission.core.decide`) exactly
as a ``jobs.submitted`` record would, so what ``admit`` says is what the service does. With
``--json`` it prints per document ``{"allowed", "job", "violations"}`` (a list when the
file holds several);
``job`` is the mutated job as it travels on ``jobs.admitted`` (also shown for a rejected
Job that could be decoded and is at most 64 KiB, docs/design.md#bounded-records: ``null`` otherwise,
with ``jobOmitted`` saying why). The exit status is 0 when every document
is allowed, 1 otherwise, 2 when a file cannot be read.

``--validate`` is kubectl's: ``strict`` (the default, also ``true``) refuses a job with a
field no schema knows; ``warn`` admits it without the field and warns (``warnings`` in
``--json``); ``ignore`` (also ``false``) admits it silently.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec
import yaml

from vcbus.contracts._base import tag_of
from vcbus.contracts.events.jobs_admitted import (
    JobAbortAccepted,
    JobAdmitted,
    JobDeleteAccepted,
    JobResumeAccepted,
)
from vcbus.contracts.events.jobs_rejected import JobRejected, SubmissionOrigin, Violation
from vcbus.contracts.limits import MAX_PAYLOAD_ECHO_BYTES
from vcbus.contracts.objects.job import Job
from vcbus.contracts.objects.queue import Queue
from vcbus.core.step import Ctx
from vcbus.services import admission
from vcbus.services.admission import (
    AdmissionLimits,
    FieldValidation,
    Submission,
    decide,
    load_yaml,
    queues_from_manifests,
    unknown_fields,
)
from vcbus.services.cli import terminal
from vcbus.services.submission import is_queue, queue_warnings

_SafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

EXIT_ALLOWED = 0
EXIT_REJECTED = 1
EXIT_UNREADABLE = 2

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Verdict:
    """What admission said about one document of the file."""

    allowed: bool
    job: Job | None
    violations: tuple[Violation, ...]
    label: str
    violations_omitted: int = 0
    warnings: tuple[str, ...] = ()
    """Unknown fields admitted under ``--validate=warn``, in kubectl's words."""
    spec_digest: str = ""
    """An admitted job's spec digest, as ``jobs.admitted`` carries it."""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``admit`` sub-command."""
    parser = subparsers.add_parser(
        "admit",
        help="run admission on Volcano Jobs in a file and print the verdicts",
        description=(
            "Decode, mutate and validate each Job in FILE as the admission service does. "
            "Exit status 0 when all are allowed, 1 otherwise."
        ),
    )
    parser.add_argument(
        "file", metavar="FILE", help="YAML (one or more documents) or JSON; - = stdin"
    )
    parser.add_argument(
        "--queues",
        metavar="FILE",
        action="append",
        default=[],
        help="queues vcbus knows (Volcano Queue manifests or {name, weight, ...}); repeatable",
    )
    parser.add_argument("--json", action="store_true", help="print JSON")
    add_validate(parser)
    parser.set_defaults(func=run)


VALIDATE_CHOICES: dict[str, FieldValidation] = {
    "strict": FieldValidation.STRICT,
    "true": FieldValidation.STRICT,
    "warn": FieldValidation.WARN,
    "ignore": FieldValidation.IGNORE,
    "false": FieldValidation.IGNORE,
}
"""kubectl's ``--validate`` values and the field validation each asks admission for."""


def add_validate(parser: argparse.ArgumentParser) -> None:
    """Add kubectl's ``--validate`` (strict, warn, ignore) to ``parser``."""
    parser.add_argument(
        "--validate",
        choices=sorted(VALIDATE_CHOICES),
        default="strict",
        metavar="MODE",
        help=(
            "fields no schema knows: strict (default, or true) refuses the job, warn admits "
            "it without them and warns, ignore (or false) admits it silently (kubectl's)"
        ),
    )


def run(args: argparse.Namespace) -> int:
    """Admit every document of ``args.file`` and print the verdicts."""
    try:
        payload = _read(args.file)
        queues: dict[str, Queue] = {}
        for path in args.queues:
            queues.update(queues_from_manifests(_documents(_read(path))))
    except (OSError, ValueError, RecursionError, yaml.YAMLError) as exc:
        terminal.error(f"vcbus admit: {exc}\n")
        return EXIT_UNREADABLE
    payloads, several = split_documents(payload)
    fields = VALIDATE_CHOICES[args.validate]
    verdicts = [
        admit_queue(part, index) or admit(queues, part, index, fields)
        for index, part in enumerate(payloads)
    ]
    if args.json:
        rendered = [_as_json(verdict) for verdict in verdicts]
        out: object = rendered if several else rendered[0]
        terminal.write(msgspec.json.format(msgspec.json.encode(out), indent=2).decode() + "\n")
    else:
        terminal.write("".join(as_text(verdict) for verdict in verdicts))
    return EXIT_ALLOWED if all(verdict.allowed for verdict in verdicts) else EXIT_REJECTED


def admit(
    queues: dict[str, Queue],
    payload: bytes,
    index: int,
    fields: FieldValidation = FieldValidation.STRICT,
) -> Verdict:
    """Run the admission core on one document and describe its answer."""
    origin = SubmissionOrigin(topic="file", partition=0, offset=index)
    submission = Submission(payload, origin, fields)
    (event,) = decide(queues, submission, Ctx(now=_EPOCH), AdmissionLimits())
    match event:
        case JobAdmitted():
            return Verdict(
                True,
                event.manifest,
                (),
                event.job,
                warnings=_warnings(payload, fields),
                spec_digest=event.spec_digest,
            )
        case JobRejected():
            decoded = admission.decode(payload).submission
            job = admission.mutate(decoded) if isinstance(decoded, Job) else None
            label = event.job or f"document {index + 1}"
            return Verdict(False, job, event.violations, label, event.violations_omitted)
        case JobDeleteAccepted() | JobAbortAccepted() | JobResumeAccepted():
            return Verdict(True, None, (), f"{tag_of(type(event))} {event.job}")
        case _:
            return Verdict(False, None, (), f"document {index + 1}")


def admit_queue(payload: bytes, index: int) -> Verdict | None:
    """The verdict on a Queue document, as ``submit`` reads it; None for any other document."""
    try:
        (document,) = load_yaml(payload.decode("utf-8-sig"), max_chars=len(payload))
    except ValueError:
        return None
    if not is_queue(document):
        return None
    try:
        (name,) = queues_from_manifests([document])
    except ValueError as exc:
        refused = Violation(path="", reason="InvalidQueue", message=str(exc))
        return Verdict(False, None, (refused,), f"document {index + 1}")
    return Verdict(True, None, (), f"queue {name}", warnings=queue_warnings(document))


def _warnings(payload: bytes, fields: FieldValidation) -> tuple[str, ...]:
    """Kubectl's ``Warning: unknown field ...`` lines for a job admitted under ``warn``."""
    if fields is not FieldValidation.WARN:
        return ()
    try:
        (document,) = load_yaml(payload.decode("utf-8-sig"), max_chars=len(payload))
    except ValueError:
        return ()
    return tuple(field.message for field in unknown_fields(document))


def split_documents(payload: bytes) -> tuple[list[bytes], bool]:
    """Split a file into one payload per document.

    A JSON list gives one JSON payload per item; YAML gives the text of each non-empty
    document. Text that is neither (bad YAML, bad encoding, an empty file) stays one
    payload, so admission reports why.

    Returns:
        The payloads, and whether the file held a list or several documents.
    """
    if payload.lstrip().startswith(b"["):
        try:
            items = msgspec.json.decode(payload)
        except (msgspec.DecodeError, RecursionError):
            return [payload], False
        if isinstance(items, list) and items:
            return [msgspec.json.encode(item) for item in items], True
    try:
        text = payload.decode("utf-8-sig")
        spans = _document_spans(text)
    except (UnicodeDecodeError, yaml.YAMLError):
        return [payload], False
    if len(spans) <= 1:
        return [payload], False
    return [text[begin:end].encode() for begin, end in spans], True


def _document_spans(text: str) -> list[tuple[int, int]]:
    """Where each non-empty YAML document's text begins and ends.

    Reads libyaml's event stream, which is iterative: composing nodes recurses in C and
    would crash on absurdly deep input, which admission itself refuses with a reason.
    """
    spans: list[tuple[int, int]] = []
    begin = end = -1
    events = 0
    blank = False
    for event in yaml.parse(text, Loader=_SafeLoader):
        if isinstance(event, yaml.DocumentStartEvent):
            begin, events, blank = -1, 0, False
        elif isinstance(event, yaml.DocumentEndEvent):
            if begin >= 0 and not (events == 1 and blank):
                spans.append((begin, end))
        elif isinstance(event, yaml.NodeEvent | yaml.CollectionEndEvent):
            mark = event.start_mark
            if begin < 0 and mark is not None:
                begin = mark.index - mark.column
            if event.end_mark is not None:
                end = event.end_mark.index
            events += 1
            blank = isinstance(event, yaml.ScalarEvent) and event.value == "" and not event.style
    return spans


def _read(path: str) -> bytes:
    if path == "-":
        return sys.stdin.buffer.read()
    return Path(path).read_bytes()


def _documents(payload: bytes) -> list[object]:
    """The documents of a queues file; a document that is a list gives its items."""
    text = payload.decode("utf-8-sig")
    if text.lstrip().startswith("["):
        loaded: list[object] = [msgspec.json.decode(payload)]
    else:
        loaded = load_yaml(text, max_chars=len(payload))
    documents: list[object] = []
    for document in loaded:
        documents.extend(document if isinstance(document, list) else [document])
    return documents


def as_manifest(job: Job) -> dict[str, Any]:
    """The job's wire JSON, with ``apiVersion`` and ``kind`` always present (a manifest).

    The Job struct omits fields equal to their defaults, which can drop ``kind``.
    """
    return {"apiVersion": job.api_version, "kind": job.kind, **msgspec.to_builtins(job)}


def _as_json(verdict: Verdict) -> dict[str, Any]:
    job = None if verdict.job is None else as_manifest(verdict.job)
    omitted = {}
    if job is not None and not verdict.allowed:
        size = len(msgspec.json.encode(job))
        if size > MAX_PAYLOAD_ECHO_BYTES:  # an answer echoes no more than a rejection does
            job = None
            omitted = {
                "jobOmitted": f"the job is {size} bytes; answers echo at most "
                f"{MAX_PAYLOAD_ECHO_BYTES} (docs/design.md#bounded-records)"
            }
    return {
        "allowed": verdict.allowed,
        "job": job,
        **omitted,
        "violations": [
            {"path": violation.path, "reason": violation.reason, "message": violation.message}
            for violation in verdict.violations
        ],
        "violationsOmitted": verdict.violations_omitted,
        "warnings": list(verdict.warnings),
    }


def as_text(verdict: Verdict) -> str:
    """The verdict as ``vcbus admit`` prints it: one line, and one per violation or warning."""
    warnings = "".join(f"  Warning: {warning}\n" for warning in verdict.warnings)
    if verdict.allowed:
        job = verdict.job
        if job is None:
            return f"ALLOWED  {verdict.label}\n{warnings}"
        spec = job.spec
        pods = sum(task.replicas for task in spec.tasks)
        minimums = ", ".join(
            f"{task.name} {'-' if task.min_available is None else task.min_available}"
            f"/{task.replicas}"
            for task in spec.tasks
        )
        return (
            f"ALLOWED  {verdict.label}: queue {spec.queue}, minAvailable {spec.min_available} "
            f"of {pods} pods (tasks {minimums})\n{warnings}"
        )
    total = len(verdict.violations) + verdict.violations_omitted
    lines = [f"REJECTED {verdict.label}: {total} violation(s)\n"]
    lines.extend(
        f"  {violation.path or '(payload)'}: {violation.reason}: {violation.message}\n"
        for violation in verdict.violations
    )
    if verdict.violations_omitted:
        lines.append(f"  … and {verdict.violations_omitted} more, not listed\n")
    return "".join(lines)

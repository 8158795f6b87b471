"""The admission service's pure core: one submission in, exactly one event out.

``decide(queues, submission, ctx, limits)`` decodes a ``jobs.submitted`` record, and
answers with one of:

- ``JobAdmitted`` — the job passed :func:`vcbus.services.admission.rules.validate`; it carries
  the **mutated** job, its ``creationTimestamp`` set to ``ctx.now`` as the API server sets
  it (whatever the submission says; docs/design.md#arrival-order), and ``spec_digest``, a SHA-256 of
  the canonical JSON encoding of the job *as submitted* (sorted keys, so the same Job in YAML
  or JSON has one digest).
  Its id is derived from the submission's origin (topic, partition, offset), like a
  rejection's: a redelivered record yields the same id, which consumers drop. A real
  resubmission (a new record) gets a new id; the job-controller treats an equal digest
  for a job it holds as a no-op, and admits it afresh after the job was deleted.
- ``JobRejected`` — the violations (the first ``MAX_VIOLATIONS``, each path and message
  cut to ``MAX_VIOLATION_TEXT_BYTES`` of JSON text, the rest counted in
  ``violations_omitted``), the original payload as text (bytes that are not UTF-8
  replaced, cut so its JSON text is at most ``limits.max_rejected_payload_bytes``, with
  ``payload_truncated``), the origin, and the job key when a name could be read. Its id
  is derived from the origin's topic, partition and offset, so redelivery of the same
  record yields the same id. A valid job whose records could not be written
  (docs/design.md#bounded-records, :mod:`vcbus.services.admission.fit`) is rejected too, with a
  reason that names the limit.
- ``RejectionsCleared`` — for ``RejectionsClearRequested``: every rejection that named no
  job until now (``before`` is ``ctx.now``), or those of the origins the command names.
- ``JobDeleteAccepted`` / ``JobAbortAccepted`` / ``JobResumeAccepted`` — for a command
  naming a well-formed job key (``namespace/name``); the id is derived from the command's
  tag, its job and its position (topic, partition, offset), never from the ``event_id``
  the client sent: two commands that reuse one id are still two commands (a delete is
  never dropped as a duplicate of an older one), and a redelivered record keeps its id.

**Admission is stateless over jobs** (a decision already taken): it knows only the
queues, validates every submission as a Kubernetes CREATE (mutation then validation,
Volcano's mutate_job.go and validate/util.go with docs/design.md#minavailable and
docs/design.md#every-violation), and does not remember what it admitted. A resubmission with a
different spec is therefore forwarded as a new ``JobAdmitted`` (a new digest, a new id); the
job-controller, which owns per-job state, applies Volcano's UPDATE rules (Volcano's admit_job.go)
there. The queue view is folded from the ``queues`` topic by :func:`apply_queue_event`.

Nothing here does I/O, logs, or reads a clock: time is ``ctx.now``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import assert_never

import msgspec

from vcbus.contracts._base import Event, derive_event_id, tag_of
from vcbus.contracts.events.jobs_admitted import (
    JobAbortAccepted,
    JobAdmitted,
    JobDeleteAccepted,
    JobResumeAccepted,
)
from vcbus.contracts.events.jobs_rejected import (
    JobRejected,
    RejectionsCleared,
    SubmissionOrigin,
    Violation,
)
from vcbus.contracts.events.jobs_submitted import (
    JobAbortRequested,
    JobDeleteRequested,
    JobResumeRequested,
    RejectionsClearRequested,
)
from vcbus.contracts.events.queues import QueueDeclared, QueueDeleted
from vcbus.contracts.keys import JobKey, job_key
from vcbus.contracts.limits import MAX_PAYLOAD_ECHO_BYTES, MAX_VIOLATION_TEXT_BYTES, MAX_VIOLATIONS
from vcbus.contracts.manifests import ManifestError, read_queue
from vcbus.contracts.objects.job import Job
from vcbus.contracts.objects.queue import Queue
from vcbus.core.step import Ctx
from vcbus.services.admission.decode import MAX_PAYLOAD_BYTES, decode
from vcbus.services.admission.fields import FieldValidation
from vcbus.services.admission.fit import record_violations
from vcbus.services.admission.mutate import mutate
from vcbus.services.admission.names import dns1123_label_errors, dns1123_subdomain_errors
from vcbus.services.admission.rules import DEFAULT_MAX_REPLICAS, validate

ADMITTED_TAG = tag_of(JobAdmitted)
REJECTED_TAG = tag_of(JobRejected)
DELETE_ACCEPTED_TAG = tag_of(JobDeleteAccepted)
ABORT_ACCEPTED_TAG = tag_of(JobAbortAccepted)
RESUME_ACCEPTED_TAG = tag_of(JobResumeAccepted)
CLEARED_TAG = tag_of(RejectionsCleared)


@dataclass(frozen=True, slots=True)
class AdmissionLimits:
    """The limits admission enforces.

    Attributes:
        max_payload_bytes: a payload longer than this is refused without being parsed.
        max_replicas: most pods a task, and a job, may ask for.
        max_rejected_payload_bytes: how much of a refused payload ``JobRejected`` carries.
    """

    max_payload_bytes: int = MAX_PAYLOAD_BYTES
    max_replicas: int = DEFAULT_MAX_REPLICAS
    max_rejected_payload_bytes: int = MAX_PAYLOAD_ECHO_BYTES


@dataclass(frozen=True, slots=True)
class Submission:
    """One ``jobs.submitted`` record: its value, where it was read, and its field validation.

    ``fields`` comes from the record's ``field-validation`` header (``Strict`` without one).
    ``key`` is the record's key (``None`` or empty without one): a job's must be its manifest's
    ``namespace/name``, or the job is refused ``KeyMismatch`` naming both.
    """

    payload: bytes
    origin: SubmissionOrigin
    fields: FieldValidation = FieldValidation.STRICT
    key: str | None = None


def decide(
    queues: Mapping[str, Queue],
    submission: Submission,
    ctx: Ctx,
    limits: AdmissionLimits,
) -> tuple[Event, ...]:
    """Admit or reject one submission.

    Args:
        queues: the queues vcbus knows (``default`` exists even when absent).
        submission: the record's payload and origin.
        ctx: the clock (``occurred_at`` of the answer).
        limits: size and count limits.

    Returns:
        Exactly one event: ``JobAdmitted``, ``JobRejected``, ``RejectionsCleared``,
        ``JobDeleteAccepted``, ``JobAbortAccepted`` or ``JobResumeAccepted``.
    """
    decoded = decode(
        submission.payload, max_bytes=limits.max_payload_bytes, fields=submission.fields
    )
    command = decoded.submission
    if command is None:
        return (_rejected(decoded.violations, submission, ctx, limits, decoded.job_key),)
    if isinstance(command, Job):
        return (_admit(command, queues, submission, ctx, limits),)
    origin = submission.origin
    position = f"{origin.topic}/{origin.partition}/{origin.offset}"
    if isinstance(command, RejectionsClearRequested):
        # what was rejected until now is cleared: admission's clock stamps every rejection
        return (
            RejectionsCleared(
                event_id=derive_event_id(CLEARED_TAG, "", position),
                occurred_at=ctx.now,
                before=ctx.now,
                origins=command.origins,
            ),
        )
    key_errors = _job_key_errors(command.job)
    if key_errors:
        return (_rejected(key_errors, submission, ctx, limits, None),)
    # The id is the command's own content (tag, job) at its position: a redelivered
    # record keeps it, any other command gets another, whatever event_id the client chose.
    match command:
        case JobDeleteRequested():
            return (
                JobDeleteAccepted(
                    event_id=derive_event_id(DELETE_ACCEPTED_TAG, command.job, position),
                    occurred_at=ctx.now,
                    job=command.job,
                ),
            )
        case JobAbortRequested():
            return (
                JobAbortAccepted(
                    event_id=derive_event_id(ABORT_ACCEPTED_TAG, command.job, position),
                    occurred_at=ctx.now,
                    job=command.job,
                ),
            )
        case JobResumeRequested():
            return (
                JobResumeAccepted(
                    event_id=derive_event_id(RESUME_ACCEPTED_TAG, command.job, position),
                    occurred_at=ctx.now,
                    job=command.job,
                ),
            )
        case _:
            assert_never(command)


def spec_digest(job: Job) -> str:
    """Return the SHA-256 (hex) of the job's canonical JSON encoding.

    Canonical: keys sorted, and ``apiVersion``/``kind`` always written. (msgspec's
    ``omit_defaults`` compares strings by identity, so an equal ``kind`` read from a
    payload may or may not be omitted; writing both makes equal jobs hash equal.)
    """
    document = {"apiVersion": job.api_version, "kind": job.kind, **msgspec.to_builtins(job)}
    return hashlib.sha256(msgspec.json.encode(document, order="sorted")).hexdigest()


def apply_queue_event(
    queues: Mapping[str, Queue], event: QueueDeclared | QueueDeleted
) -> dict[str, Queue]:
    """Fold one ``queues`` event into the queue view (pure: returns a new mapping).

    ``default`` is never stored as absent: deleting it only removes its declared
    settings, and :func:`vcbus.services.admission.rules.validate` keeps treating it as an open
    queue, as docs/design.md#every-violation says it exists from the start.
    """
    match event:
        case QueueDeclared():
            return {**queues, event.queue.name: event.queue}
        case QueueDeleted():
            return {name: queue for name, queue in queues.items() if name != event.name}
        case _:
            assert_never(event)


def queues_from_manifests(documents: Iterable[object]) -> dict[str, Queue]:
    """Read queues from Volcano Queue manifests or from vcbus' flat queue objects.

    Each document is read by :func:`vcbus.contracts.manifests.read_queue` (a
    ``scheduling.volcano.sh/v1beta1`` Queue, or a mapping without ``kind`` read as a
    contracts ``Queue`` with Kubernetes quantities). ``None`` documents (empty YAML
    documents) are skipped. A queue name must be a DNS-1123 subdomain, as the API server
    requires (docs/design.md#names-and-numbers).

    Args:
        documents: decoded YAML or JSON documents.

    Returns:
        The queues by name, in document order.

    Raises:
        ValueError: a document is neither, or holds a bad value; the message says which.
    """
    queues: dict[str, Queue] = {}
    for number, document in enumerate(documents, start=1):
        if document is None:
            continue
        try:
            queue = read_queue(document)
        except ManifestError as exc:
            raise ValueError(f"queue document {number}: {exc}") from None
        name_errors = dns1123_subdomain_errors(queue.name)
        if name_errors:
            raise ValueError(
                f"queue document {number}: queue name {queue.name!r}: {'; '.join(name_errors)}"
            )
        queues[queue.name] = queue
    return queues


def _admit(
    job: Job,
    queues: Mapping[str, Queue],
    submission: Submission,
    ctx: Ctx,
    limits: AdmissionLimits,
) -> Event:
    key = job_key(job.metadata.namespace, job.metadata.name)
    if submission.key and job.metadata.name and submission.key != key:
        # a record keyed for one job but naming another: its partition, its ordering and
        # what readers of the key expect would all be another job's
        mismatch = Violation(
            path="metadata",
            reason="KeyMismatch",
            message=(
                f"the record's key {submission.key!r} is not the manifest's namespace/name "
                f"{str(key)!r}: publish a job under the key namespace/name of its manifest"
            ),
        )
        return _rejected((mismatch,), submission, ctx, limits, key)
    violations = validate(job, queues, max_replicas=limits.max_replicas)
    if violations:
        return _rejected(violations, submission, ctx, limits, key)
    digest = spec_digest(job)
    origin = submission.origin
    mutated = mutate(job)
    admitted = JobAdmitted(
        event_id=derive_event_id(ADMITTED_TAG, f"{origin.topic}/{origin.partition}", origin.offset),
        occurred_at=ctx.now,
        job=key,
        manifest=msgspec.structs.replace(
            mutated,
            metadata=msgspec.structs.replace(mutated.metadata, creation_timestamp=ctx.now),
        ),
        spec_digest=digest,
    )
    too_large = record_violations(admitted)
    if too_large:
        return _rejected(too_large, submission, ctx, limits, key)
    return admitted


def _rejected(
    violations: tuple[Violation, ...],
    submission: Submission,
    ctx: Ctx,
    limits: AdmissionLimits,
    key: JobKey | None,
) -> JobRejected:
    origin = submission.origin
    echo, truncated = _echo(submission.payload, limits.max_rejected_payload_bytes)
    listed = tuple(_clipped(violation) for violation in violations[:MAX_VIOLATIONS])
    return JobRejected(
        event_id=derive_event_id(REJECTED_TAG, f"{origin.topic}/{origin.partition}", origin.offset),
        occurred_at=ctx.now,
        job=key,
        violations=listed,
        payload=echo,
        payload_truncated=truncated,
        origin=origin,
        violations_omitted=len(violations) - len(listed),
    )


def _echo(payload: bytes, limit: int) -> tuple[str, bool]:
    """The payload as text whose JSON encoding is at most ``limit`` bytes, and if it was cut."""
    text, cut = _fitted(payload[:limit].decode("utf-8", errors="replace"), limit)
    return text, cut or len(payload) > limit


def _clipped(violation: Violation) -> Violation:
    return Violation(
        path=_clip(violation.path), reason=violation.reason, message=_clip(violation.message)
    )


def _clip(text: str) -> str:
    fitted, cut = _fitted(text, MAX_VIOLATION_TEXT_BYTES - len("…".encode()))
    return fitted + "…" if cut else text


def _fitted(text: str, limit: int) -> tuple[str, bool]:
    """``text`` cut until its JSON encoding is at most ``limit`` bytes, and if it was cut.

    Characters outside ASCII take up to four bytes and control characters an escape of
    six, so the text is cut again until its encoding fits.
    """
    cut = False
    while (size := len(msgspec.json.encode(text)) - 2) > limit:
        text = text[: len(text) * limit // size - 1]
        cut = True
    return text, cut


def _job_key_errors(key: str) -> tuple[Violation, ...]:
    namespace, sep, name = key.partition("/")
    if not sep or not namespace or not name or "/" in name:
        return (
            Violation(
                path="job",
                reason="InvalidJobKey",
                message=f"job must be a job key namespace/name, got {key!r}",
            ),
        )
    if dns1123_label_errors(namespace):
        return (
            Violation(
                path="job",
                reason="InvalidJobKey",
                message=f"job key {key!r}: namespace {namespace!r} is not a DNS-1123 label",
            ),
        )
    if dns1123_subdomain_errors(name):
        return (
            Violation(
                path="job",
                reason="InvalidJobKey",
                message=(
                    f"job key {key!r}: name {name!r} is not a DNS-1123 subdomain, so no job has it"
                ),
            ),
        )
    return ()

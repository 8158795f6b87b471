"""Turn the bytes of a ``jobs.submitted`` record into a Job, a command, or violations.

A submission is JSON or YAML text (docs/design.md#topics). A JSON object whose ``type`` is one of
the command tags is a command; anything else must be one ``batch.volcano.sh/v1alpha1`` Job.
Decoding never raises: every way a payload can be wrong is a :class:`Violation` with a
stable reason code (docs/design.md#every-violation "input that is not a Job at all … is rejected
with the decoder's reason"):

``PayloadTooLarge``, ``InvalidEncoding``, ``EmptyPayload``, ``MalformedJson``,
``MalformedYaml``, ``NestingTooDeep``, ``PayloadTooComplex`` (YAML aliases that expand to
too many values or too much text), ``RecursiveAlias`` (an alias inside its own anchor),
``MultipleDocuments``, ``NotAMapping``, ``UnknownCommand``, ``InvalidCommand``,
``NotAJob``, ``InvalidKey``, ``UnknownField`` (strict field validation,
:mod:`vcbus.services.admission.fields`), ``InvalidType``, ``MissingName``, ``Unencodable``.

The size limit runs before any parsing; parsing itself, bounded in time and memory
whatever the bytes (docs/design.md#bounded-records), is
:mod:`vcbus.services.admission.bounded_parse`, which gives the plain document or the encoding, JSON,
YAML and bound violations. This module turns that document into a submission.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import msgspec

from vcbus.contracts._base import tag_of
from vcbus.contracts.events.jobs_rejected import Violation
from vcbus.contracts.events.jobs_submitted import (
    JobAbortRequested,
    JobDeleteRequested,
    JobResumeRequested,
    RejectionsClearRequested,
)
from vcbus.contracts.keys import JobKey, job_key
from vcbus.contracts.objects.job import JOB_API_VERSION, JOB_KIND, Job
from vcbus.services.admission.bounded_parse import RefusedError, parse_payload
from vcbus.services.admission.fields import FieldValidation, known_only, unknown_fields

MAX_PAYLOAD_BYTES = 1024 * 1024
"""Default size limit of one submission (1 MiB)."""


Command = JobDeleteRequested | JobAbortRequested | JobResumeRequested | RejectionsClearRequested
Submission = Job | Command

COMMAND_TAGS: tuple[str, ...] = tuple(
    tag_of(command)
    for command in (
        JobDeleteRequested,
        JobAbortRequested,
        JobResumeRequested,
        RejectionsClearRequested,
    )
)
"""``type`` values that make a JSON object a command rather than a manifest."""


@dataclass(frozen=True, slots=True)
class Decoded:
    """What decoding found: a submission or violations, and the job key if one was read.

    Exactly one of ``submission`` and ``violations`` is set. ``job_key`` is the key of the
    job a rejected payload names (``metadata.namespace``/``metadata.name``) when they
    could be read, so the rejection can be keyed like the job.
    """

    submission: Submission | None
    violations: tuple[Violation, ...] = ()
    job_key: JobKey | None = None


def decode_submission(
    payload: bytes,
    *,
    max_bytes: int = MAX_PAYLOAD_BYTES,
    fields: FieldValidation = FieldValidation.STRICT,
) -> Job | Command | tuple[Violation, ...]:
    """Decode one submission.

    Args:
        payload: the record value as published on ``jobs.submitted``.
        max_bytes: payloads longer than this are refused without being parsed.
        fields: whether a field no schema knows refuses the job (``Strict``).

    Returns:
        The Job or the command, or the violations that make the payload unusable.
    """
    decoded = decode(payload, max_bytes=max_bytes, fields=fields)
    if decoded.submission is not None:
        return decoded.submission
    return decoded.violations


def decode(
    payload: bytes,
    *,
    max_bytes: int = MAX_PAYLOAD_BYTES,
    fields: FieldValidation = FieldValidation.STRICT,
) -> Decoded:
    """Decode one submission and report the job key it names even when it is refused.

    Args:
        payload: the record value as published on ``jobs.submitted``.
        max_bytes: payloads longer than this are refused without being parsed.
        fields: ``Strict`` refuses a job with a field no schema knows, one violation
            ``UnknownField`` per field; ``Warn`` and ``Ignore`` drop such fields.

    Returns:
        A :class:`Decoded` with the submission, or with the violations and, when the
        payload is a mapping with a readable ``metadata.name``, the job key.
    """
    if len(payload) > max_bytes:
        return Decoded(
            None,
            (
                Violation(
                    path="",
                    reason="PayloadTooLarge",
                    message=f"payload is {len(payload)} bytes; the limit is {max_bytes} bytes",
                ),
            ),
        )
    try:
        document = parse_payload(payload, max_chars=max_bytes)
    except RefusedError as refused:
        return Decoded(None, refused.violations)
    key = _peek_job_key(document)
    try:
        return Decoded(_interpret(document, fields), (), key)
    except RefusedError as refused:
        return Decoded(None, refused.violations, key)


_MAX_KEY_NAME = 253
_MAX_KEY_NAMESPACE = 63


def _peek_job_key(document: object) -> JobKey | None:
    """The key a refused payload names, when it could be a job's key (bounded, no ``/``)."""
    if not isinstance(document, Mapping):
        return None
    metadata = document.get("metadata")
    if not isinstance(metadata, Mapping):
        return None
    name = metadata.get("name")
    namespace = metadata.get("namespace")
    if not isinstance(name, str) or not name or "/" in name or len(name) > _MAX_KEY_NAME:
        return None
    if namespace is not None and (
        not isinstance(namespace, str) or "/" in namespace or len(namespace) > _MAX_KEY_NAMESPACE
    ):
        return None
    return job_key(namespace, name)


def _interpret(document: object, fields: FieldValidation) -> Submission:
    if not isinstance(document, Mapping):
        raise RefusedError(
            Violation(
                path="",
                reason="NotAMapping",
                message=(
                    f"expected a Job object (a mapping), got {_describe(document)}; "
                    f"jobs.submitted takes {JOB_API_VERSION} {JOB_KIND} objects"
                ),
            )
        )
    if "type" in document and "kind" not in document and "apiVersion" not in document:
        return _command(document)
    _check_kind(document)
    bad_keys = list(_non_string_keys(document))
    if bad_keys:
        raise RefusedError(*bad_keys)
    if fields is FieldValidation.STRICT:
        unknown = unknown_fields(document)
        if unknown:
            raise RefusedError(
                *(Violation(path=f.path, reason="UnknownField", message=f.message) for f in unknown)
            )
    else:
        document = known_only(document)
    try:
        job = msgspec.convert(document, Job)
    except msgspec.ValidationError as exc:
        path, message = _split_msgspec_error(str(exc))
        raise RefusedError(Violation(path=path, reason="InvalidType", message=message)) from None
    if not job.metadata.name:
        hint = (
            f" (generateName {job.metadata.generate_name!r} is not supported: a job needs a "
            "stable key, namespace/name)"
            if job.metadata.generate_name
            else ""
        )
        raise RefusedError(
            Violation(
                path="metadata.name",
                reason="MissingName",
                message=f"metadata.name is required{hint}",
            )
        )
    try:
        msgspec.json.encode(job)
    except (TypeError, ValueError, OverflowError) as exc:
        raise RefusedError(
            Violation(
                path="", reason="Unencodable", message=f"job cannot be encoded as JSON: {exc}"
            )
        ) from None
    return job


def _command(document: Mapping[object, object]) -> Command:
    tag = document.get("type")
    if tag not in COMMAND_TAGS:
        raise RefusedError(
            Violation(
                path="type",
                reason="UnknownCommand",
                message=(
                    f"type {tag!r} is not a command jobs.submitted knows "
                    f"({', '.join(COMMAND_TAGS)}), and the object has no kind/apiVersion of a Job"
                ),
            )
        )
    try:
        command: Command = msgspec.convert(document, Command)
    except msgspec.ValidationError as exc:
        path, message = _split_msgspec_error(str(exc))
        raise RefusedError(Violation(path=path, reason="InvalidCommand", message=message)) from None
    return command


def _check_kind(document: Mapping[object, object]) -> None:
    kind = document.get("kind")
    api_version = document.get("apiVersion")
    if kind == JOB_KIND and api_version == JOB_API_VERSION:
        return
    if kind is None and api_version is None:
        found = "an object without kind and apiVersion"
    else:
        found = f"kind {kind!r} (apiVersion {api_version!r})"
    raise RefusedError(
        Violation(
            path="kind" if kind != JOB_KIND else "apiVersion",
            reason="NotAJob",
            message=(
                f"not a Job: got {found}; jobs.submitted takes {JOB_API_VERSION} {JOB_KIND} objects"
            ),
        )
    )


def _non_string_keys(document: Mapping[object, object]) -> Iterator[Violation]:
    stack: list[tuple[object, str]] = [(document, "")]
    while stack:
        value, path = stack.pop()
        if isinstance(value, Mapping):
            for key in value:
                if not isinstance(key, str):
                    yield Violation(
                        path=path,
                        reason="InvalidKey",
                        message=f"mapping keys must be strings, got {key!r} ({_describe(key)})",
                    )
                    continue
                stack.append((value[key], f"{path}.{key}" if path else key))
        elif isinstance(value, list):
            stack.extend((item, f"{path}[{index}]") for index, item in enumerate(value))


def _split_msgspec_error(text: str) -> tuple[str, str]:
    """Split ``"Expected `int`, got `str` - at `$.spec.x`"`` into a k8s path and a message."""
    message, sep, where = text.rpartition(" - at `")
    if not sep:
        return "", text
    location = where.rstrip("`")
    if location.startswith("key` in `"):
        location = location.removeprefix("key` in `")
        message = f"{message} (a mapping key)"
    path = location.removeprefix("$").removeprefix(".")
    return path, f"{path or 'payload'}: {message}"


def _describe(value: object) -> str:
    match value:
        case None:
            return "null"
        case bool():
            return "a boolean"
        case int() | float():
            return "a number"
        case str():
            return "a string"
        case list() | tuple():
            return "a list"
        case _:
            return f"a {type(value).__name__}"

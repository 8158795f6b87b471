"""Turn the bytes of a ``jobs.submitted`` record into a Job, a command, or violations.

A submission is JSON or YAML text (DESIGN §2). A JSON object whose ``type`` is one of the
command tags is a command; anything else must be one ``batch.volcano.sh/v1alpha1`` Job.
Decoding never raises: every way a payload can be wrong is a :class:`Violation` with a
stable reason code (SPEC A2 "input that is not a Job at all … is rejected with the
decoder's reason"):

``PayloadTooLarge``, ``InvalidEncoding``, ``EmptyPayload``, ``MalformedJson``,
``MalformedYaml``, ``NestingTooDeep``, ``PayloadTooComplex`` (YAML aliases that expand to
too many values or too much text), ``RecursiveAlias`` (an alias inside its own anchor),
``MultipleDocuments``, ``NotAMapping``, ``UnknownCommand``, ``InvalidCommand``,
``NotAJob``, ``InvalidKey``, ``InvalidType``, ``MissingName``, ``Unencodable``.

Guards run before the expensive steps: the size limit before any parsing, and for YAML a
streaming pass over libyaml's events (iterative, so no recursion) that refuses recursive
aliases and bounds nesting depth and the node count after alias expansion before the
document is composed (SPEC A12: parsing bounded in time and memory whatever the bytes).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from itertools import accumulate

import msgspec
import yaml

from contracts._base import tag_of
from contracts.events.jobs_rejected import Violation
from contracts.events.jobs_submitted import (
    JobAbortRequested,
    JobDeleteRequested,
    JobResumeRequested,
)
from contracts.keys import JobKey, job_key
from contracts.objects.job import JOB_API_VERSION, JOB_KIND, Job

_BaseLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _SafeLoader(_BaseLoader):  # type: ignore[misc,valid-type]
    """PyYAML's safe loader with YAML 1.2 core-schema numbers (SPEC A13).

    PyYAML resolves YAML 1.1 forms: ``1:30`` is the sexagesimal 90, ``1_000`` is 1000,
    ``017`` octal 15, ``0b11`` binary. YAML 1.2 (and JSON, which the API server reads)
    has none of them; here they stay strings, so a field that needs a number refuses
    them with its path instead of taking a number the user did not write. ``017`` (1.1:
    15, 1.2: 17, JSON: invalid) stays a string too.
    """


_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_SafeLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag not in (_INT, _FLOAT)]
    for first, resolvers in _BaseLoader.yaml_implicit_resolvers.items()
}
_SafeLoader.add_implicit_resolver(
    _INT, re.compile(r"^(?:[-+]?(?:0|[1-9][0-9]*)|0o[0-7]+|0x[0-9a-fA-F]+)$"), list("-+0123456789")
)
_SafeLoader.add_implicit_resolver(
    _FLOAT,
    re.compile(
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+\.[0-9]*)(?:[eE][-+]?[0-9]+)?|[-+]?[0-9]+[eE][-+]?[0-9]+"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
    ),
    list("-+.0123456789"),
)

MAX_PAYLOAD_BYTES = 1024 * 1024
"""Default size limit of one submission (1 MiB)."""

MAX_DEPTH = 100
"""Deepest nesting of mappings and lists accepted (a real Job is about 20 deep)."""

MAX_NODES = 1_000_000
"""Most scalars and collections a document may hold after its aliases are expanded."""


Command = JobDeleteRequested | JobAbortRequested | JobResumeRequested
Submission = Job | Command

COMMAND_TAGS: tuple[str, ...] = tuple(
    tag_of(command) for command in (JobDeleteRequested, JobAbortRequested, JobResumeRequested)
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


class _RefusedError(Exception):
    """Internal: decoding stops with these violations."""

    def __init__(self, *violations: Violation) -> None:
        super().__init__(violations[0].message)
        self.violations = violations


def decode_submission(
    payload: bytes, *, max_bytes: int = MAX_PAYLOAD_BYTES
) -> Job | Command | tuple[Violation, ...]:
    """Decode one submission.

    Args:
        payload: the record value as published on ``jobs.submitted``.
        max_bytes: payloads longer than this are refused without being parsed.

    Returns:
        The Job or the command, or the violations that make the payload unusable.
    """
    decoded = decode(payload, max_bytes=max_bytes)
    if decoded.submission is not None:
        return decoded.submission
    return decoded.violations


def decode(payload: bytes, *, max_bytes: int = MAX_PAYLOAD_BYTES) -> Decoded:
    """Decode one submission and report the job key it names even when it is refused.

    Args:
        payload: the record value as published on ``jobs.submitted``.
        max_bytes: payloads longer than this are refused without being parsed.

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
        document = _parse(payload, max_chars=max_bytes)
    except _RefusedError as refused:
        return Decoded(None, refused.violations)
    key = _peek_job_key(document)
    try:
        return Decoded(_interpret(document), (), key)
    except _RefusedError as refused:
        return Decoded(None, refused.violations, key)


def _parse(payload: bytes, *, max_chars: int) -> object:
    try:
        text = payload.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise _RefusedError(
            Violation(
                path="",
                reason="InvalidEncoding",
                message=f"payload is not UTF-8 text: {exc.reason} at byte {exc.start}",
            )
        ) from None
    stripped = text.lstrip()
    if not stripped:
        raise _RefusedError(
            Violation(path="", reason="EmptyPayload", message="payload is empty: expected a Job")
        )
    if stripped[0] in "{[":
        json_error = ""
        try:
            document = msgspec.json.decode(stripped)
        except msgspec.DecodeError as exc:
            json_error = str(exc)
        except RecursionError:
            # The decoder's own nesting limit is above vcbus's: the verdict stays vcbus's.
            raise _RefusedError(
                _too_deep(path="", reached=str(_json_depth(stripped)), where="")
            ) from None
        else:
            _check_depth(document)
            return document
        try:
            return _parse_yaml(text, max_chars=max_chars)
        except _RefusedError as refused:
            if refused.violations[0].reason != "MalformedYaml":
                raise
        raise _RefusedError(
            Violation(
                path="", reason="MalformedJson", message=f"payload is not valid JSON: {json_error}"
            )
        )
    return _parse_yaml(text, max_chars=max_chars)


def load_yaml(text: str, *, max_chars: int) -> list[object]:
    """Load every non-empty document of YAML text, bounded as admission bounds a payload.

    For readers of whole files (``vcbus submit``, ``vcbus admit --queues``): recursive
    aliases, nesting beyond :data:`MAX_DEPTH` and alias expansion beyond
    :data:`MAX_NODES` values or ``max_chars`` characters are refused before the
    documents are composed.

    Args:
        text: the YAML text.
        max_chars: most characters the documents may expand to (the text's own length in
            bytes never refuses a file without aliases).

    Returns:
        The documents, empty ones left out.

    Raises:
        ValueError: the text is not valid YAML or passes a bound; the message says which.
    """
    try:
        return _load_yaml(text, max_chars=max_chars)
    except _RefusedError as refused:
        violation = refused.violations[0]
        where = f" at {violation.path}" if violation.path else ""
        raise ValueError(f"{violation.reason}{where}: {violation.message}") from None


def _load_yaml(text: str, *, max_chars: int) -> list[object]:
    try:
        _scan_events(text, max_chars=max_chars)
        return [doc for doc in yaml.load_all(text, Loader=_SafeLoader) if doc is not None]
    except (yaml.YAMLError, RecursionError, ValueError, TypeError, OverflowError) as exc:
        raise _RefusedError(
            Violation(path="", reason="MalformedYaml", message=f"payload is not valid YAML: {exc}")
        ) from None


def _parse_yaml(text: str, *, max_chars: int) -> object:
    documents = _load_yaml(text, max_chars=max_chars)
    if not documents:
        raise _RefusedError(
            Violation(
                path="",
                reason="EmptyPayload",
                message="payload holds no YAML document: expected a Job",
            )
        )
    if len(documents) > 1:
        raise _RefusedError(
            Violation(
                path="",
                reason="MultipleDocuments",
                message=(
                    f"payload holds {len(documents)} YAML documents; publish one Job per record "
                    "(`vcbus admit` and `vcbus submit` split multi-document files)"
                ),
            )
        )
    document: object = documents[0]
    return document


def _scan_events(text: str, *, max_chars: int) -> None:
    """Bound nesting depth and expanded size by streaming libyaml's events (no recursion).

    ``seen`` counts the values the document would have once every alias is replaced by
    what its anchor holds, and ``chars`` their text (a scalar's characters, one per
    collection); an anchored node's extent is the difference of both between its end and
    its start, and its height how many levels it spans, so an alias counts the values,
    text and depth it brings. An alias to an anchor whose collection is still open would
    make the document contain itself: it is refused (``RecursiveAlias``) before anything
    is composed. The text bound is the payload limit: a scalar's value is never longer
    than its source and a collection takes at least one character, so only aliases can
    pass it. ``path`` follows the position in the document so a refusal can say where a
    limit was passed. Some PyYAML releases (6.0.4 on) refuse deep flow nesting themselves
    while looking ahead, before the events reach this scan: that refusal is recognised
    and answered as vcbus's own ``NestingTooDeep``.
    """
    open_collections: list[_OpenCollection] = []
    path = _EventPath()
    anchors: dict[str, _Extent | None] = {}
    seen = chars = 0
    scanned_to = 0
    try:
        for event in yaml.parse(text, Loader=_SafeLoader):
            scanned_to = event.end_mark.index if event.end_mark is not None else scanned_to
            if isinstance(event, yaml.CollectionStartEvent):
                if len(open_collections) == MAX_DEPTH:
                    raise _RefusedError(
                        _too_deep(path=path.text(), reached=f"at least {MAX_DEPTH + 1}", where="")
                    )
                path.open(isinstance(event, yaml.MappingStartEvent))
                level = len(open_collections) + 1
                if event.anchor is not None:
                    anchors[event.anchor] = None
                open_collections.append(_OpenCollection(seen, chars, event.anchor, level, level))
                seen += 1
                chars += 1
            elif isinstance(event, yaml.CollectionEndEvent) and open_collections:
                path.close()
                closed = open_collections.pop()
                if closed.anchor is not None:
                    anchors[closed.anchor] = _Extent(
                        seen - closed.started_at, chars - closed.chars_at, closed.height()
                    )
                if open_collections:
                    open_collections[-1].reach(closed.deepest)
            elif isinstance(event, yaml.ScalarEvent):
                path.value(event.value)
                seen += 1
                chars += len(event.value)
                if event.anchor is not None:
                    anchors[event.anchor] = _Extent(1, len(event.value), 0)
            elif isinstance(event, yaml.AliasEvent):
                extent = _expand_alias(event.anchor or "", anchors, path)
                path.value(None)
                seen += extent.values
                chars += extent.chars
                reached = len(open_collections) + extent.levels
                if reached > MAX_DEPTH:
                    raise _RefusedError(
                        _too_deep(
                            path=path.text(), reached=f"at least {reached}", where=" (via an alias)"
                        )
                    )
                if open_collections:
                    open_collections[-1].reach(reached)
            if seen > MAX_NODES or chars > max_chars:
                what = f"{MAX_NODES} values" if seen > MAX_NODES else f"{max_chars} characters"
                raise _RefusedError(
                    Violation(
                        path=path.text(),
                        reason="PayloadTooComplex",
                        message=f"payload expands to more than {what} (YAML aliases?)",
                    )
                )
    except yaml.MarkedYAMLError as exc:
        if "nesting depth" not in (exc.problem or "") or exc.problem_mark is None:
            raise
        mark = exc.problem_mark
        ahead = text[scanned_to : mark.index + 1]
        raise _parser_too_deep(mark, ahead, len(open_collections), path) from None


def _parser_too_deep(mark: yaml.Mark, ahead: str, depth: int, path: _EventPath) -> _RefusedError:
    """The ``NestingTooDeep`` refusal for PyYAML's own at ``mark``; ``ahead`` is unscanned."""
    reached = depth + ahead.count("[") + ahead.count("{") - ahead.count("]") - ahead.count("}")
    return _RefusedError(
        _too_deep(
            path=path.text(),
            reached=f"at least {max(reached, MAX_DEPTH + 1)}",
            where=f" (the YAML parser stopped at line {mark.line + 1}, col {mark.column + 1})",
        )
    )


@dataclass(frozen=True, slots=True)
class _Extent:
    """What an anchored node holds once expanded: values, scalar characters, levels."""

    values: int
    chars: int
    levels: int


_SCALAR = _Extent(1, 0, 0)


@dataclass(slots=True)
class _OpenCollection:
    """A collection the event stream is inside: where it began and how deep it reaches."""

    started_at: int
    chars_at: int
    anchor: str | None
    level: int
    deepest: int

    def reach(self, depth: int) -> None:
        self.deepest = max(self.deepest, depth)

    def height(self) -> int:
        return self.deepest - self.level + 1


def _expand_alias(name: str, anchors: Mapping[str, _Extent | None], path: _EventPath) -> _Extent:
    """The values and levels alias ``*name`` brings; refused when its anchor is still open.

    ``anchors`` holds, per name, the latest anchor of that name (``None`` while its
    collection is open), which is the one YAML resolves an alias to. An alias to an open
    collection would make it contain itself: a cycle no Job can hold, and one a walk over
    the document never leaves.
    """
    if name in anchors and anchors[name] is None:
        where = path.text()
        raise _RefusedError(
            Violation(
                path=where,
                reason="RecursiveAlias",
                message=(
                    f"alias *{_bounded_path(name)} at {where or 'the top'} refers to the "
                    f"collection &{_bounded_path(name)} it is inside: a recursive YAML "
                    "structure is not a Job"
                ),
            )
        )
    # an undefined alias counts as one value here; composing refuses it (MalformedYaml)
    return anchors.get(name) or _SCALAR


class _EventPath:
    """The path (``a.b[2].c``) of the node the event stream is at, kept as events pass."""

    __slots__ = ("_frames",)

    def __init__(self) -> None:
        # One frame per open collection: [is_mapping, position, expecting_key]; position is
        # the current key of a mapping or the index of the next item of a sequence.
        self._frames: list[list[object]] = []

    def open(self, is_mapping: bool) -> None:
        self._frames.append([is_mapping, "" if is_mapping else 0, True])

    def close(self) -> None:
        self._frames.pop()
        self._done()

    def value(self, scalar: str | None) -> None:
        if self._frames and self._frames[-1][0] and self._frames[-1][2]:
            self._frames[-1][1] = scalar if scalar is not None else "*"
            self._frames[-1][2] = False
            return
        self._done()

    def _done(self) -> None:
        if not self._frames:
            return
        frame = self._frames[-1]
        if frame[0]:
            frame[2] = True
        else:
            frame[1] = int(str(frame[1])) + 1

    def text(self) -> str:
        parts: list[str] = []
        for is_mapping, position, _ in self._frames:
            if is_mapping:
                parts.append(f".{position}" if parts else str(position))
            else:
                parts.append(f"[{position}]")
        return _bounded_path("".join(parts))


_MAX_PATH_CHARS = 512
"""Longest path a nesting refusal quotes (the rest is elided from the front)."""


def _bounded_path(path: str) -> str:
    if len(path) <= _MAX_PATH_CHARS:
        return path
    return "…" + path[-(_MAX_PATH_CHARS - 1) :]


def _too_deep(*, path: str, reached: str, where: str) -> Violation:
    return Violation(
        path=path,
        reason="NestingTooDeep",
        message=f"payload is nested {reached} levels deep{where}; the limit is {MAX_DEPTH} levels",
    )


_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)


def _json_depth(text: str) -> int:
    """Deepest bracket nesting of JSON text, strings left out (for the decoder's refusal)."""
    bare = _JSON_STRING.sub("", text)
    steps = (1 if char in "[{" else -1 for char in bare if char in "[]{}")
    return max(accumulate(steps), default=0)


def _check_depth(document: object) -> None:
    """Refuse a decoded JSON document nested beyond the limit, saying where and how deep."""
    deepest = 0
    stack: list[tuple[object, int]] = [(document, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict | list):
            deepest = max(deepest, depth)
            children = value.values() if isinstance(value, dict) else value
            stack.extend((child, depth + 1) for child in children)
    if deepest > MAX_DEPTH:
        raise _RefusedError(
            _too_deep(path=_bounded_path(_first_too_deep(document)), reached=str(deepest), where="")
        )


def _first_too_deep(document: object) -> str:
    """The path of the first collection, in document order, that lies beyond the limit."""
    stack: list[tuple[object, int, str]] = [(document, 1, "")]
    while stack:
        value, depth, path = stack.pop()
        if not isinstance(value, dict | list):
            continue
        if depth > MAX_DEPTH:
            return path
        if isinstance(value, dict):
            items = [(f"{path}.{key}" if path else str(key), child) for key, child in value.items()]
        else:
            items = [(f"{path}[{index}]", child) for index, child in enumerate(value)]
        stack.extend((child, depth + 1, child_path) for child_path, child in reversed(items))
    return ""


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


def _interpret(document: object) -> Submission:
    if not isinstance(document, Mapping):
        raise _RefusedError(
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
        raise _RefusedError(*bad_keys)
    try:
        job = msgspec.convert(document, Job)
    except msgspec.ValidationError as exc:
        path, message = _split_msgspec_error(str(exc))
        raise _RefusedError(Violation(path=path, reason="InvalidType", message=message)) from None
    if not job.metadata.name:
        hint = (
            f" (generateName {job.metadata.generate_name!r} is not supported: a job needs a "
            "stable key, namespace/name)"
            if job.metadata.generate_name
            else ""
        )
        raise _RefusedError(
            Violation(
                path="metadata.name",
                reason="MissingName",
                message=f"metadata.name is required{hint}",
            )
        )
    try:
        msgspec.json.encode(job)
    except (TypeError, ValueError, OverflowError) as exc:
        raise _RefusedError(
            Violation(
                path="", reason="Unencodable", message=f"job cannot be encoded as JSON: {exc}"
            )
        ) from None
    return job


def _command(document: Mapping[object, object]) -> Command:
    tag = document.get("type")
    if tag not in COMMAND_TAGS:
        raise _RefusedError(
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
        raise _RefusedError(
            Violation(path=path, reason="InvalidCommand", message=message)
        ) from None
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
    raise _RefusedError(
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

"""Bounded parsing of submission text: bytes to a plain document (docs/design.md#bounded-records).

A submission is JSON or YAML text (docs/design.md#topics). This module turns its bytes into the
plain mappings, lists and scalars they spell, or refuses them with violations whose reason codes
:mod:`vcbus.services.admission.decode` reports: ``InvalidEncoding``, ``EmptyPayload``,
``MalformedJson``, ``MalformedYaml``, ``NestingTooDeep``, ``PayloadTooComplex`` (YAML
aliases that expand to too many values or too much text), ``RecursiveAlias`` (an alias
inside its own anchor) and ``MultipleDocuments``. What the document means (a Job or a
command) is decided by :mod:`vcbus.services.admission.decode`.

Guards run before the expensive steps: for YAML a streaming pass over libyaml's events
(iterative, so no recursion) refuses recursive aliases and bounds nesting depth and the
node count after alias expansion before the document is composed; a decoded JSON document
is checked for depth without recursion (docs/design.md#bounded-records: parsing bounded in time and
memory whatever the bytes). YAML numbers follow the YAML 1.2 core schema
(docs/design.md#names-and-numbers).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import accumulate

import msgspec
import yaml

from vcbus.contracts.events.jobs_rejected import Violation

_BaseLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _SafeLoader(_BaseLoader):  # type: ignore[misc,valid-type]
    """PyYAML's safe loader with YAML 1.2 core-schema numbers (docs/design.md#names-and-numbers).

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

MAX_DEPTH = 100
"""Deepest nesting of mappings and lists accepted (a real Job is about 20 deep)."""

MAX_NODES = 1_000_000
"""Most scalars and collections a document may hold after its aliases are expanded."""

FILE_EXPANSION_CHARS = 1024 * 1024
"""Characters a file's YAML aliases may always expand it to (admission's payload limit):
a larger file may expand to its own size."""


class RefusedError(Exception):
    """Parsing or decoding stops with these violations."""

    def __init__(self, *violations: Violation) -> None:
        super().__init__(violations[0].message)
        self.violations = violations


def parse_payload(payload: bytes, *, max_chars: int) -> object:
    """The document a payload's UTF-8 JSON or YAML text holds, bounded.

    Args:
        payload: the record value, already within the size limit.
        max_chars: most characters YAML aliases may expand the document to.

    Returns:
        The one document, as plain mappings, lists and scalars.

    Raises:
        RefusedError: the payload is not one bounded JSON or YAML document.
    """
    try:
        text = payload.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise RefusedError(
            Violation(
                path="",
                reason="InvalidEncoding",
                message=f"payload is not UTF-8 text: {exc.reason} at byte {exc.start}",
            )
        ) from None
    stripped = text.lstrip()
    if not stripped:
        raise RefusedError(
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
            raise RefusedError(
                _too_deep(path="", reached=str(_json_depth(stripped)), where="")
            ) from None
        else:
            _check_depth(document)
            return document
        try:
            return _parse_yaml(text, max_chars=max_chars)
        except RefusedError as refused:
            if refused.violations[0].reason != "MalformedYaml":
                raise
        raise RefusedError(
            Violation(
                path="", reason="MalformedJson", message=f"payload is not valid JSON: {json_error}"
            )
        )
    return _parse_yaml(text, max_chars=max_chars)


def load_yaml(text: str, *, max_chars: int) -> list[object]:
    """Load every non-empty document of YAML text, bounded as admission bounds a payload.

    For readers of whole files (``vcbus submit``, ``vcbus admit --queues``): recursive
    aliases, nesting beyond :data:`MAX_DEPTH` and alias expansion beyond
    :data:`MAX_NODES` values or ``max_chars`` characters (at least
    :data:`FILE_EXPANSION_CHARS`) are refused before the documents are composed, the
    error naming the bound.

    Args:
        text: the YAML text.
        max_chars: most characters the documents may expand to (the text's own length in
            bytes never refuses a file without aliases); below
            :data:`FILE_EXPANSION_CHARS`, that bound applies, so a short file's anchors
            may expand past the file's own size.

    Returns:
        The documents, empty ones left out.

    Raises:
        ValueError: the text is not valid YAML or passes a bound; the message says which.
    """
    try:
        return _load_yaml(text, max_chars=max(max_chars, FILE_EXPANSION_CHARS))
    except RefusedError as refused:
        violation = refused.violations[0]
        where = f" at {violation.path}" if violation.path else ""
        raise ValueError(f"{violation.reason}{where}: {violation.message}") from None


def _load_yaml(text: str, *, max_chars: int) -> list[object]:
    try:
        _scan_events(text, max_chars=max_chars)
        return [doc for doc in yaml.load_all(text, Loader=_SafeLoader) if doc is not None]
    except (yaml.YAMLError, RecursionError, ValueError, TypeError, OverflowError) as exc:
        raise RefusedError(
            Violation(path="", reason="MalformedYaml", message=f"payload is not valid YAML: {exc}")
        ) from None


def _parse_yaml(text: str, *, max_chars: int) -> object:
    documents = _load_yaml(text, max_chars=max_chars)
    if not documents:
        raise RefusedError(
            Violation(
                path="",
                reason="EmptyPayload",
                message="payload holds no YAML document: expected a Job",
            )
        )
    if len(documents) > 1:
        raise RefusedError(
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
                    raise RefusedError(
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
                    raise RefusedError(
                        _too_deep(
                            path=path.text(), reached=f"at least {reached}", where=" (via an alias)"
                        )
                    )
                if open_collections:
                    open_collections[-1].reach(reached)
            if seen > MAX_NODES or chars > max_chars:
                what = f"{MAX_NODES} values" if seen > MAX_NODES else f"{max_chars} characters"
                raise RefusedError(
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


def _parser_too_deep(mark: yaml.Mark, ahead: str, depth: int, path: _EventPath) -> RefusedError:
    """The ``NestingTooDeep`` refusal for PyYAML's own at ``mark``; ``ahead`` is unscanned."""
    reached = depth + ahead.count("[") + ahead.count("{") - ahead.count("]") - ahead.count("}")
    return RefusedError(
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
        raise RefusedError(
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
        raise RefusedError(
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

"""TopicCodec: events to JSON bytes and back, one typed decoder per topic union.

A record holds one event (a JSON object) or several (a JSON array of them, written by the
outbox, ``batch``); :meth:`TopicCodec.decode_all` reads both. A record whose ``type`` is
unknown to this reader (a newer writer is ahead) decodes as :class:`Unknown`; a record of
a known type that does not decode is :class:`Poison`. In a record of several events, the
events of unknown types are left out, and one that does not decode makes the whole record
poison.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import msgspec

from vcbus.contracts._base import Event, tag_of

E = TypeVar("E", bound=Event)

_ENCODER = msgspec.json.Encoder()


class _TypePeek(msgspec.Struct):
    type: str | None = None


_PEEK = msgspec.json.Decoder(_TypePeek)


@dataclass(frozen=True, slots=True)
class Unknown:
    """A record of a type this reader does not know."""

    type: str | None


@dataclass(frozen=True, slots=True)
class Poison:
    """A record that cannot be decoded: the reason, for the dead-letter topic."""

    error: str


def encode(event: Event) -> bytes:
    """Encode an event as JSON."""
    return _ENCODER.encode(event)


def event_tag(event: Event) -> str:
    """The wire tag of an event (``"job.admitted.v1"``)."""
    return tag_of(type(event))


_RAW_LIST = msgspec.json.Decoder(list[msgspec.Raw])


class TopicCodec(Generic[E]):
    """Decodes the records of one topic into its union."""

    def __init__(self, union: object) -> None:
        self._decoder: msgspec.json.Decoder[E] = msgspec.json.Decoder(union)
        one: Any = union
        self._either: msgspec.json.Decoder[E | list[E]] = msgspec.json.Decoder(
            one | list.__class_getitem__(one)  # the union, or a list of it
        )
        self._tags = frozenset(_tags_of(union))

    @property
    def tags(self) -> frozenset[str]:
        """Every tag of the union."""
        return self._tags

    def decode_all(self, value: bytes | None) -> tuple[E, ...] | Unknown | Poison:
        """Decode one record value: its event, or its events in order."""
        if value is None:
            return Poison("empty record value (tombstone) on an event topic")
        try:
            decoded = self._either.decode(value)
        except (msgspec.DecodeError, RecursionError):
            pass
        else:
            if not isinstance(decoded, list):
                return (decoded,)
            if decoded:
                return tuple(decoded)
            return Poison("an empty array of events")
        if value.lstrip()[:1] != b"[":
            single = self._decode(value)
            return single if isinstance(single, Unknown | Poison) else (single,)
        try:
            parts = _RAW_LIST.decode(value)
        except (msgspec.DecodeError, RecursionError) as exc:
            return Poison(f"not a JSON array of events: {exc}")
        events: list[E] = []
        unknown: Unknown | None = None
        for index, part in enumerate(parts):
            one = self._decode(bytes(part))
            if isinstance(one, Poison):
                return Poison(f"event {index} of {len(parts)}: {one.error}")
            if isinstance(one, Unknown):
                unknown = one
            else:
                events.append(one)
        if events:
            return tuple(events)
        return unknown or Poison("an empty array of events")

    def _decode(self, value: bytes) -> E | Unknown | Poison:
        """Decode one event (a JSON object)."""
        try:
            return self._decoder.decode(value)
        except RecursionError:
            # msgspec raises it, not DecodeError, on nesting deeper than the interpreter allows
            return Poison("not a JSON event: nested too deeply")
        except msgspec.DecodeError as exc:
            try:
                peek = _PEEK.decode(value)
            except (msgspec.DecodeError, RecursionError):
                return Poison(f"not a JSON event: {exc}")
            if peek.type is not None and peek.type not in self._tags:
                return Unknown(peek.type)
            return Poison(f"{peek.type or 'untyped record'}: {exc}")


def _tags_of(union: object) -> list[str]:
    args = getattr(union, "__args__", None)
    members = list(args) if args else [union]
    return [
        tag_of(member)
        for member in members
        if isinstance(member, type) and issubclass(member, Event)
    ]

"""The event base every wire message derives from, and deterministic event ids."""

from __future__ import annotations

import hashlib
import uuid
from datetime import datetime

import msgspec

_NAMESPACE = uuid.UUID("6b1d0c3e-3f0a-5c55-9a51-7663627573a1")
_NAMESPACE_BYTES = _NAMESPACE.bytes


class Event(msgspec.Struct, frozen=True, kw_only=True, tag_field="type"):
    """Base of every event and command on a topic.

    Concrete types set an explicit, versioned tag (``"job.admitted.v1"``); wire names
    never come from Python identifiers.
    """

    event_id: str
    occurred_at: datetime


def tag_of(kind: type[Event]) -> str:
    """Return the wire tag of an event type (``tag_of(JobAdmitted) == "job.admitted.v1"``).

    The one place that reads a tag off a type: code that needs a tag (an event id's kind,
    a header, a table of tags) asks here instead of retyping the string.

    Raises:
        TypeError: ``kind``'s tag is not a string (every concrete event sets one).
    """
    tag = kind.__struct_config__.tag
    if not isinstance(tag, str):
        raise TypeError(f"{kind.__name__} has no wire tag")
    return tag


def derive_event_id(kind: str, entity_key: str, generation: int | str) -> str:
    """Derive the id of an event from what it is about.

    A handler that runs twice after a crash emits the same ids, so consumers can drop
    the duplicate.

    Args:
        kind: the event kind, usually its tag.
        entity_key: the key of the entity the event is about (``ns/name``, a pod key).
        generation: what distinguishes successive events of that kind for that entity.

    Returns:
        A UUID (version 5) in its canonical text form.
    """
    # The text of ``str(uuid.uuid5(_NAMESPACE, name))``, built without the UUID object
    # (a third of the time: every service derives an id per event it emits).
    name = f"{kind}\x1f{entity_key}\x1f{generation}".encode()
    digest = bytearray(hashlib.sha1(_NAMESPACE_BYTES + name).digest()[:16])
    digest[6] = (digest[6] & 0x0F) | 0x50  # version 5
    digest[8] = (digest[8] & 0x3F) | 0x80  # RFC 4122 variant
    text = digest.hex()
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"

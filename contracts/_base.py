"""The event base every wire message derives from, and deterministic event ids."""

from __future__ import annotations

import uuid
from datetime import datetime

import msgspec

_NAMESPACE = uuid.UUID("6b1d0c3e-3f0a-5c55-9a51-7663627573a1")


class Event(msgspec.Struct, frozen=True, kw_only=True, tag_field="type"):
    """Base of every event and command on a topic.

    Concrete types set an explicit, versioned tag (``"job.admitted.v1"``); wire names
    never come from Python identifiers.
    """

    event_id: str
    occurred_at: datetime


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
    return str(uuid.uuid5(_NAMESPACE, f"{kind}\x1f{entity_key}\x1f{generation}"))

"""Outbox: events a handler emitted, turned into records with headers and send spans.

The ``send <topic>`` span is made when the event is emitted, as a child of the handler's
span, so the trace continues; the records are published later, in one batch, before the
input offsets are committed.
"""

from __future__ import annotations

from collections.abc import Iterable

from contracts._base import Event
from contracts.topics import key_of, topic_of
from shared.bus.codec import encode, event_tag
from shared.bus.envelope import HEADER_CONTENT_TYPE, HEADER_EVENT_ID, HEADER_EVENT_TYPE
from shared.bus.records import OutRecord
from shared.tracing.spans import record_send_span


def event_record(event: Event, prefix: str) -> OutRecord:
    """Encode one event as a record on its topic, with a ``send`` span and trace headers."""
    spec = topic_of(event)
    key = key_of(event)
    tag = event_tag(event)
    headers: list[tuple[str, bytes]] = [
        (HEADER_EVENT_TYPE, tag.encode()),
        (HEADER_EVENT_ID, event.event_id.encode()),
        (HEADER_CONTENT_TYPE, b"application/json"),
    ]
    topic = f"{prefix}{spec.topic}"
    record_send_span(topic, key=key, event_type=tag, event_id=event.event_id, headers=headers)
    return OutRecord(topic, key.encode() if key else None, encode(event), tuple(headers))


class Outbox:
    """Records waiting to be published: outputs first, then state changes."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self._records: list[OutRecord] = []

    def add_events(self, events: Iterable[Event]) -> None:
        """Queue events for publishing."""
        self._records.extend(event_record(event, self.prefix) for event in events)

    def add_record(self, record: OutRecord) -> None:
        """Queue a raw record (a dead letter)."""
        self._records.append(record)

    def take(self) -> list[OutRecord]:
        """Every queued record, emptying the outbox."""
        records, self._records = self._records, []
        return records

    def __len__(self) -> int:
        return len(self._records)

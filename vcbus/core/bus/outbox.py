"""Outbox: events a handler emitted, turned into records with headers and send spans.

A record's ``send <topic>`` span is made when its event is emitted, as a child of the
handler's span, so the trace continues; records of one batch emitted under the same span
to the same topic share it (``SendSpans``). The records are published later, in one
batch, before the input offsets are committed; the outputs about one key join one record
(``batch``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import structlog

from vcbus.contracts._base import Event
from vcbus.contracts.topics import key_of, topic_of
from vcbus.core.bus.batch import join
from vcbus.core.bus.codec import encode, event_tag
from vcbus.core.bus.envelope import HEADER_CONTENT_TYPE, HEADER_EVENT_ID, HEADER_EVENT_TYPE
from vcbus.core.bus.errors import RecordTooLargeError
from vcbus.core.bus.records import OutRecord, Record, oversized
from vcbus.core.tracing.spans import SendSpans

log = structlog.get_logger("vcbus.bus")


def event_record(event: Event, prefix: str, sends: SendSpans | None = None) -> OutRecord:
    """Encode one event as a record on its topic, with a ``send`` span and trace headers.

    With ``sends``, the record joins the batch's ``send`` span of its topic and current
    span (ended by ``sends.close()``); without, it has a ``send`` span of its own.
    """
    spec = topic_of(event)
    key = key_of(event)
    tag = event_tag(event)
    topic = f"{prefix}{spec.topic}"
    spans = SendSpans() if sends is None else sends
    trace_headers = spans.headers(topic, key=key, event_type=tag, event_id=event.event_id)
    if sends is None:
        spans.close()  # a span of its own: ended at once
    headers = (
        (HEADER_EVENT_TYPE, tag.encode()),
        (HEADER_EVENT_ID, event.event_id.encode()),
        (HEADER_CONTENT_TYPE, b"application/json"),
        *trace_headers,
    )
    return OutRecord(topic, key.encode() if key else None, encode(event), headers)


Supersedes = Callable[[Event], tuple[str, bool] | None]
"""Which outputs of a batch a later one replaces: an event's group and whether a later
event of its group replaces it (``None``: never replaced, replaces nothing)."""


class Outbox:
    """Records waiting to be published, each with the input record it answers, if any.

    With ``supersedes``, an output that a later output of the same batch replaces is left
    out when the batch is taken (Volcano's work queue, which keeps one update per key):
    the job-controller publishes a job's counts once per batch, and every phase change.
    """

    def __init__(self, prefix: str, supersedes: Supersedes | None = None) -> None:
        self.prefix = prefix
        self._records: list[OutRecord] = []
        self._sources: list[Record | None] = []
        self._groups: list[tuple[str, bool] | None] = []
        self._supersedes = supersedes
        self._sends = SendSpans()

    def add_events(self, events: Iterable[Event], *, source: Record | None = None) -> None:
        """Queue events for publishing, as answers to ``source`` when given.

        An event whose record would be over the 1 MiB limit (docs/design.md#bounded-records) can
        never be written. Answering an input, it raises, so the router sends the input to its
        ``.DLT``; with no input (a timer's or a cycle's output) it is logged and dropped,
        as nothing else could stand for it.

        Raises:
            RecordTooLargeError: an answer to ``source`` is over the limit; none of
                ``events`` is queued.
        """
        events = list(events)
        records = [event_record(event, self.prefix, self._sends) for event in events]
        fitting = []
        groups = []
        for event, record in zip(events, records, strict=True):
            reason = oversized(record)
            if reason is None:
                fitting.append(record)
                groups.append(self._supersedes(event) if self._supersedes else None)
            elif source is not None:
                raise RecordTooLargeError(reason, record=record)
            else:
                log.error("output_dropped", topic=record.topic, error=reason)
        self._records.extend(fitting)
        self._sources.extend([source] * len(fitting))
        self._groups.extend(groups)

    def add_record(self, record: OutRecord, *, source: Record | None = None) -> None:
        """Queue a raw record (a dead letter of ``source``)."""
        self._records.append(record)
        self._sources.append(source)
        self._groups.append(None)

    def take(self) -> list[OutRecord]:
        """Every queued record, emptying the outbox; the events about one key joined."""
        return join([record for record, _ in self.take_with_sources()])

    def take_with_sources(self) -> list[tuple[OutRecord, Record | None]]:
        """Every queued record with the input it answers (``None``: a timer's), emptying it.

        Superseded outputs are left out; nothing is joined yet (``batch.join`` when sent).
        """
        self._sends.close()
        queued = list(zip(self._records, self._sources, strict=True))
        groups = self._groups
        self._records, self._sources, self._groups = [], [], []
        if not any(groups):
            return queued
        later: set[str] = set()
        kept = []
        for item, group in zip(reversed(queued), reversed(groups), strict=True):
            if group is not None:
                name, replaceable = group
                if replaceable and name in later:
                    continue
                later.add(name)
            kept.append(item)
        kept.reverse()
        return kept

    def __len__(self) -> int:
        return len(self._records)

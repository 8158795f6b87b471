"""Records that carry several events: a decision's events about one key, in one record.

A service publishes the outputs of a batch (or a cycle) that share their topic, key,
event type and trace as one record (``join``): its value is the JSON array of the events,
its headers those of the first, with ``event-count``. A job's pods created in one step,
a job's pods bound to one node in one cycle, and the reports of one job's pods in one
batch each take one record instead of one per pod: fewer records to write, to fetch, to
trace and to commit. A group is cut at :data:`MAX_RECORD_EVENTS` events and at the 1 MiB
record limit (docs/design.md#bounded-records).

Each event keeps its own ``event_id`` in its body, so readers deduplicate exactly as
before; every reader decodes both shapes (``TopicCodec.decode_all``), so the records
written before remain readable.
"""

from __future__ import annotations

from collections.abc import Sequence

from vcbus.contracts._base import Event
from vcbus.contracts.limits import MAX_RECORD_BYTES, MAX_RECORD_EVENTS
from vcbus.core.bus.codec import encode
from vcbus.core.bus.envelope import HEADER_EVENT_COUNT, HEADER_EVENT_ID
from vcbus.core.bus.records import Headers, OutRecord, Record, record_bytes

_COUNT_HEADER_BYTES = len(HEADER_EVENT_COUNT) + len(str(MAX_RECORD_EVENTS))


def events_in(record: Record | OutRecord) -> int:
    """How many events ``record`` carries (1 for a record of one event)."""
    for name, value in reversed(record.headers):
        if name == HEADER_EVENT_COUNT:
            return int(value) if value.isdigit() else 1
    return 1


def join(records: Sequence[OutRecord], *, limit: int = MAX_RECORD_BYTES) -> list[OutRecord]:
    """``records`` with the events about one key gathered into as few records as may be.

    A record joins the newest open group of its topic, key and partition when it has the
    same headers but for the event id (the same event type and trace); otherwise it opens
    a new group there. So a key's records keep their order, and a record moves ahead only
    to join others (Kafka orders nothing across keys). A group of several becomes one
    record that keeps the first one's headers, adds ``event-count`` and holds the events'
    JSON values as one array; a group is closed at :data:`MAX_RECORD_EVENTS` events, or
    when the next would carry it over ``limit``. Records without a key, tombstones and
    records already joined stand alone.
    """
    groups: list[list[OutRecord]] = []
    open_groups: dict[tuple[str, bytes, int | None], _Group] = {}
    for record in records:
        value = record.value
        if record.key is None or value is None or value[:1] == b"[":
            groups.append([record])
            continue
        headers = tuple(item for item in record.headers if item[0] != HEADER_EVENT_ID)
        where = (record.topic, record.key, record.partition)
        group = open_groups.get(where)
        size = len(value) + 1
        if (
            group is not None
            and group.headers == headers
            and len(group.records) < MAX_RECORD_EVENTS
            and group.size + size <= limit
        ):
            group.records.append(record)
            group.size += size
            continue
        group = open_groups[where] = _Group(
            headers, [record], record_bytes(record) + 2 + _COUNT_HEADER_BYTES
        )
        groups.append(group.records)
    return [_joined(members) for members in groups]


class _Group:
    """An open group of ``join``: the headers its records share, them, and its size."""

    __slots__ = ("headers", "records", "size")

    def __init__(self, headers: Headers, records: list[OutRecord], size: int) -> None:
        self.headers = headers
        self.records = records
        self.size = size


def _joined(run: list[OutRecord]) -> OutRecord:
    """The record of a group: the first record itself when it is alone."""
    first = run[0]
    if len(run) == 1:
        return first
    value = b"[" + b",".join(record.value or b"" for record in run) + b"]"
    headers = (*first.headers, (HEADER_EVENT_COUNT, str(len(run)).encode()))
    return OutRecord(first.topic, first.key, value, headers, first.partition)


def single(record: Record, event: Event) -> Record:
    """A record like ``record`` that carries only ``event``, one of its events.

    What a reader dead-letters when one event of a record of several fails: that event,
    with the record's origin, and no other.
    """
    headers = tuple(
        (name, event.event_id.encode()) if name == HEADER_EVENT_ID else (name, value)
        for name, value in record.headers
        if name != HEADER_EVENT_COUNT
    )
    return Record(record.topic, record.partition, record.offset, record.key, encode(event), headers)

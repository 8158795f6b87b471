"""Envelope: a decoded event with the transport facts it arrived with."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

from vcbus.core.bus.records import Headers

E = TypeVar("E")

HEADER_EVENT_TYPE = "event-type"
HEADER_EVENT_ID = "event-id"
HEADER_CONTENT_TYPE = "content-type"
HEADER_EVENT_COUNT = "event-count"
"""On a record that carries several events (``batch``): how many; absent on a record of
one event."""
HEADER_DLT_TOPIC = "dlt-original-topic"
HEADER_DLT_PARTITION = "dlt-original-partition"
HEADER_DLT_OFFSET = "dlt-original-offset"
HEADER_DLT_ERROR = "dlt-error"
HEADER_DLT_SERVICE = "dlt-service"
HEADER_DLT_VALUE_TRUNCATED = "dlt-value-truncated"


@dataclass(frozen=True, slots=True)
class Envelope(Generic[E]):
    """A decoded record: ``event`` plus topic (without prefix), key, partition, offset, headers."""

    topic: str
    key: str | None
    event: E
    partition: int
    offset: int
    headers: Headers = ()

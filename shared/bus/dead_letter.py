"""Dead letters: a record that could not be handled, with where it came from and why."""

from __future__ import annotations

from contracts.topics import DLT_SUFFIX
from shared.bus.envelope import (
    HEADER_DLT_ERROR,
    HEADER_DLT_OFFSET,
    HEADER_DLT_PARTITION,
    HEADER_DLT_SERVICE,
    HEADER_DLT_TOPIC,
)
from shared.bus.records import OutRecord, Record

MAX_ERROR_BYTES = 8192


def dead_letter(record: Record, error: str, *, service: str) -> OutRecord:
    """Return the ``<topic>.DLT`` record for ``record``: its bytes, headers and origin.

    The original key, value and headers are kept as they were; the origin (topic,
    partition, offset), the error and the service are added as headers.
    """
    headers = (
        *record.headers,
        (HEADER_DLT_TOPIC, record.topic.encode()),
        (HEADER_DLT_PARTITION, str(record.partition).encode()),
        (HEADER_DLT_OFFSET, str(record.offset).encode()),
        (HEADER_DLT_ERROR, error.encode("utf-8", "replace")[:MAX_ERROR_BYTES]),
        (HEADER_DLT_SERVICE, service.encode()),
    )
    return OutRecord(f"{record.topic}{DLT_SUFFIX}", record.key, record.value, headers)

"""Dead letters: a record that could not be handled, with where it came from and why."""

from __future__ import annotations

from vcbus.contracts.limits import MAX_RECORD_BYTES
from vcbus.contracts.topics import DLT_SUFFIX
from vcbus.core.bus.envelope import (
    HEADER_DLT_ERROR,
    HEADER_DLT_OFFSET,
    HEADER_DLT_PARTITION,
    HEADER_DLT_SERVICE,
    HEADER_DLT_TOPIC,
    HEADER_DLT_VALUE_TRUNCATED,
)
from vcbus.core.bus.records import OutRecord, Record, record_bytes

MAX_ERROR_BYTES = 8192


def dead_letter(record: Record, error: str, *, service: str) -> OutRecord:
    """Return the ``<topic>.DLT`` record for ``record``: its bytes, headers and origin.

    The original key, value and headers are kept as they were; the origin (topic,
    partition, offset), the error and the service are added as headers. A value so close
    to the 1 MiB limit that the added headers would carry the letter over it is cut, and
    the header ``dlt-value-truncated`` says so; the whole value stays at its origin.
    """
    headers: tuple[tuple[str, bytes], ...] = (
        *record.headers,
        (HEADER_DLT_TOPIC, record.topic.encode()),
        (HEADER_DLT_PARTITION, str(record.partition).encode()),
        (HEADER_DLT_OFFSET, str(record.offset).encode()),
        (HEADER_DLT_ERROR, error.encode("utf-8", "replace")[:MAX_ERROR_BYTES]),
        (HEADER_DLT_SERVICE, service.encode()),
    )
    letter = OutRecord(f"{record.topic}{DLT_SUFFIX}", record.key, record.value, headers)
    over = record_bytes(letter) - MAX_RECORD_BYTES
    if over <= 0 or record.value is None:
        return letter
    headers = (*headers, (HEADER_DLT_VALUE_TRUNCATED, b"true"))
    cut = record.value[: max(0, len(record.value) - over - len(HEADER_DLT_VALUE_TRUNCATED) - 4)]
    return OutRecord(letter.topic, record.key, cut, headers)

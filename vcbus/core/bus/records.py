"""Raw records as they cross the broker, independent of any client library."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from vcbus.contracts.limits import MAX_RECORD_BYTES, RECORD_FRAMING_BYTES

Headers = tuple[tuple[str, bytes], ...]


@dataclass(frozen=True, slots=True, order=True)
class TopicPartition:
    """One partition of one topic."""

    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class Record:
    """A record read from a partition."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: Headers = ()

    @property
    def tp(self) -> TopicPartition:
        """The partition this record was read from."""
        return TopicPartition(self.topic, self.partition)

    def header(self, name: str) -> bytes | None:
        """Return the last value of a header, or ``None``."""
        for key, value in reversed(self.headers):
            if key == name:
                return value
        return None


@dataclass(frozen=True, slots=True)
class OutRecord:
    """A record to publish. ``partition`` is chosen by the key when ``None``."""

    topic: str
    key: bytes | None
    value: bytes | None
    headers: Headers = ()
    partition: int | None = None


def record_bytes(record: OutRecord) -> int:
    """What a record weighs against the broker's limit: key, value, headers and framing."""
    headers = sum(len(name) + len(value) for name, value in record.headers)
    return len(record.key or b"") + len(record.value or b"") + headers + RECORD_FRAMING_BYTES


def oversized(record: OutRecord, limit: int = MAX_RECORD_BYTES) -> str | None:
    """Why ``record`` is over ``limit`` (1 MiB, docs/design.md#bounded-records), else ``None``."""
    size = record_bytes(record)
    if size <= limit:
        return None
    return (
        f"a record for {record.topic} would be {size} bytes; records are limited to {limit} bytes"
    )


@dataclass(frozen=True, slots=True)
class TopicConfig:
    """A topic to create: partitions, copies and Kafka topic configs (``cleanup.policy`` ...)."""

    name: str
    partitions: int
    replication_factor: int = 1
    configs: Mapping[str, str] = field(default_factory=dict)

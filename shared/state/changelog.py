"""ChangelogStore: per-key state kept in a compacted topic co-partitioned with the input.

The Kafka Streams state-store pattern (faust's tables): state for input partition ``p`` is
written to changelog partition ``p``, and restored from it whenever ``p`` is assigned,
before any record of ``p`` is handled.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Generic, TypeVar

import msgspec

from shared.bus.protocol import Bus
from shared.bus.records import OutRecord, TopicPartition

S = TypeVar("S")

_ENCODER = msgspec.json.Encoder()


class ChangelogStore(Generic[S]):
    """Key → state, per partition, backed by a compacted changelog topic."""

    def __init__(self, name: str, state_type: type[S]) -> None:
        self.name = name
        self._decoder: msgspec.json.Decoder[S] = msgspec.json.Decoder(state_type)
        self._data: dict[int, dict[str, S]] = {}
        self._writes: dict[tuple[int, str], S | None] = {}
        self.topic = ""

    def bind(self, topic: str) -> None:
        """Set the changelog topic (``<prefix><service>.<store>.changelog``)."""
        self.topic = topic

    async def restore(self, bus: Bus, partitions: Iterable[int], *, client_id: str) -> int:
        """Load the given partitions from the changelog; return how many records were read."""
        wanted = sorted(set(partitions))
        for partition in wanted:
            self._data[partition] = {}
        if not wanted:
            return 0
        tps = [TopicPartition(self.topic, p) for p in wanted]
        consumer = bus.consumer([self.topic], group=None, client_id=client_id, partitions=tps)
        await consumer.start()
        read = 0
        try:
            ends = await consumer.end_offsets(tps)
            positions = dict.fromkeys(tps, 0)
            while any(positions[tp] < ends[tp] for tp in tps):
                for record in await consumer.getmany(timeout=1.0, max_records=10_000):
                    read += 1
                    positions[record.tp] = record.offset + 1
                    key = (record.key or b"").decode()
                    if record.value is None:
                        self._data[record.partition].pop(key, None)
                    else:
                        self._data[record.partition][key] = self._decoder.decode(record.value)
        finally:
            await consumer.stop()
        return read

    def drop(self, partitions: Iterable[int]) -> None:
        """Forget partitions this replica no longer owns."""
        for partition in partitions:
            self._data.pop(partition, None)

    def get(self, partition: int, key: str) -> S | None:
        """The state of ``key`` in ``partition``, or ``None``."""
        return self._data.get(partition, {}).get(key)

    def put(self, partition: int, key: str, state: S | None) -> None:
        """Set (or delete, with ``None``) the state of a key; written at the next flush."""
        table = self._data.setdefault(partition, {})
        if state is None:
            table.pop(key, None)
        else:
            table[key] = state
        self._writes[(partition, key)] = state

    def items(self) -> Iterator[tuple[int, str, S]]:
        """Every (partition, key, state) held, in a stable order."""
        for partition in sorted(self._data):
            table = self._data[partition]
            for key in sorted(table):
                yield partition, key, table[key]

    def has_writes(self) -> bool:
        """Whether changes wait to be written."""
        return bool(self._writes)

    def take_writes(self) -> list[OutRecord]:
        """The changelog records of every change since the last call."""
        out = [
            OutRecord(
                self.topic,
                key.encode(),
                None if state is None else _ENCODER.encode(state),
                partition=partition,
            )
            for (partition, key), state in self._writes.items()
        ]
        self._writes = {}
        return out

"""ChangelogStore: per-key state kept in a compacted topic co-partitioned with the input.

The Kafka Streams state-store pattern (faust's tables): state for input partition ``p`` is
written to changelog partition ``p``, and restored from it whenever ``p`` is assigned,
before any record of ``p`` is handled.

A key's state is one record, or, with a :class:`StateCodec` that splits it, a head record
at the key and part records at ``KEY#part/N`` (N from 1), each under the record limit. The
parts are written before their head, on the same partition, and only those whose bytes
changed; parts a smaller state no longer has are deleted (tombstones). A state written as
one record before a codec split it reads as it did.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Generic, Protocol, TypeVar

import msgspec

from vcbus.core.bus.protocol import Bus
from vcbus.core.bus.records import OutRecord, TopicPartition

S = TypeVar("S")

_ENCODER = msgspec.json.Encoder()

PART_MARK = "#part/"
"""Between a key and the number of one of its state's part records (no key has ``#``)."""


class StateCodec(Protocol[S]):
    """How a state is written as records: its head first, then its parts (if any)."""

    def encode(self, state: S) -> list[bytes]:
        """The state's records: the head, then each part."""
        ...

    def decode(self, head: bytes, parts: Sequence[bytes]) -> S:
        """The state from its head and its parts (in order; none when it has none).

        Raises:
            ValueError: the head and the parts do not make a state (a part is missing).
        """
        ...


class WholeState(Generic[S]):
    """The state in one record (no parts)."""

    def __init__(self, state_type: type[S]) -> None:
        self._decoder: msgspec.json.Decoder[S] = msgspec.json.Decoder(state_type)

    def encode(self, state: S) -> list[bytes]:
        """One record."""
        return [_ENCODER.encode(state)]

    def decode(self, head: bytes, parts: Sequence[bytes]) -> S:
        """The record, decoded."""
        return self._decoder.decode(head)


def part_key(key: str, number: int) -> str:
    """The changelog key of part ``number`` (from 1) of ``key``'s state."""
    return f"{key}{PART_MARK}{number}"


class ChangelogStore(Generic[S]):
    """Key → state, per partition, backed by a compacted changelog topic."""

    def __init__(
        self, name: str, state_type: type[S], *, codec: StateCodec[S] | None = None
    ) -> None:
        self.name = name
        self._codec: StateCodec[S] = codec or WholeState(state_type)
        self._data: dict[int, dict[str, S]] = {}
        self._writes: dict[tuple[int, str], S | None] = {}
        self._encoded: dict[tuple[int, str], list[bytes]] = {}
        """Records of a pending write already encoded (by :meth:`encode`)."""
        self._written: dict[tuple[int, str], list[int]] = {}
        """Per key with parts, a hash of each part as last written or restored."""
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
        heads: dict[tuple[int, str], bytes] = {}
        parts: dict[tuple[int, str], dict[int, bytes]] = {}
        try:
            ends = await consumer.end_offsets(tps)
            positions = dict.fromkeys(tps, 0)
            while any(positions[tp] < ends[tp] for tp in tps):
                for record in await consumer.getmany(timeout=1.0, max_records=10_000):
                    read += 1
                    positions[record.tp] = record.offset + 1
                    key, mark, number = (record.key or b"").decode().partition(PART_MARK)
                    if mark:
                        held = parts.setdefault((record.partition, key), {})
                        if record.value is None:
                            held.pop(int(number), None)
                        else:
                            held[int(number)] = record.value
                    elif record.value is None:
                        heads.pop((record.partition, key), None)
                    else:
                        heads[record.partition, key] = record.value
        finally:
            await consumer.stop()
        for (partition, key), head in heads.items():
            held = parts.get((partition, key), {})
            ordered = [held[n] for n in sorted(held)]
            self._data[partition][key] = self._codec.decode(head, ordered)
            if held:
                self._written[partition, key] = [hash(part) for part in ordered]
        return read

    def drop(self, partitions: Iterable[int]) -> None:
        """Forget partitions this replica no longer owns."""
        gone = set(partitions)
        for partition in gone:
            self._data.pop(partition, None)
        self._written = {at: hashes for at, hashes in self._written.items() if at[0] not in gone}

    def get(self, partition: int, key: str) -> S | None:
        """The state of ``key`` in ``partition``, or ``None``."""
        return self._data.get(partition, {}).get(key)

    def encode(self, state: S) -> list[bytes]:
        """The records ``state`` is written as: its head, then its parts."""
        return self._codec.encode(state)

    def put(
        self, partition: int, key: str, state: S | None, *, encoded: list[bytes] | None = None
    ) -> None:
        """Set (or delete, with ``None``) the state of a key; written at the next flush.

        ``encoded`` is :meth:`encode`'s answer for ``state`` when the caller has it.
        """
        table = self._data.setdefault(partition, {})
        if state is None:
            table.pop(key, None)
        else:
            table[key] = state
        self._writes[(partition, key)] = state
        if encoded is None:
            self._encoded.pop((partition, key), None)
        else:
            self._encoded[partition, key] = encoded

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
        """The changelog records of every change since the last call.

        Per key: its changed parts, tombstones of the parts it no longer has, then its head.
        """
        out: list[OutRecord] = []
        for (partition, key), state in self._writes.items():
            records = (
                []
                if state is None
                else self._encoded.get((partition, key)) or self._codec.encode(state)
            )
            head, parts = (records[0], records[1:]) if records else (None, [])
            before = self._written.pop((partition, key), [])
            hashes = [hash(part) for part in parts]
            for number, (part, digest) in enumerate(zip(parts, hashes, strict=True), start=1):
                if number > len(before) or before[number - 1] != digest:
                    out.append(
                        OutRecord(
                            self.topic, part_key(key, number).encode(), part, partition=partition
                        )
                    )
            for number in range(len(parts) + 1, len(before) + 1):
                out.append(
                    OutRecord(self.topic, part_key(key, number).encode(), None, partition=partition)
                )
            if hashes:
                self._written[partition, key] = hashes
            out.append(OutRecord(self.topic, key.encode(), head, partition=partition))
        self._writes = {}
        self._encoded = {}
        return out

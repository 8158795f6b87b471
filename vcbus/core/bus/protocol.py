"""The one bus protocol: raw producers and consumers, implemented in memory and on Kafka."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Protocol

from vcbus.core.bus.records import OutRecord, Record, TopicConfig, TopicPartition

RebalanceCallback = Callable[[frozenset[TopicPartition]], Awaitable[None]]


class Producer(Protocol):
    """Publishes records; ``send`` returns once the broker acknowledged every one."""

    async def send(self, records: Sequence[OutRecord]) -> None:
        """Publish ``records`` in order and wait for all acknowledgements."""
        ...

    async def stop(self) -> None:
        """Flush and close."""
        ...


class Consumer(Protocol):
    """Reads records of a group's assigned partitions (or of every partition, without group)."""

    async def start(self) -> None:
        """Join the group (or assign every partition) and wait for the first assignment.

        A start that raises (or is cancelled) leaves nothing open: ``stop`` is for a
        consumer whose start returned.
        """
        ...

    async def getmany(self, timeout: float, max_records: int) -> list[Record]:
        """Return up to ``max_records`` records, waiting at most ``timeout`` seconds."""
        ...

    async def commit(self, offsets: Mapping[TopicPartition, int]) -> None:
        """Commit the next offsets to read (never automatic)."""
        ...

    def assignment(self) -> frozenset[TopicPartition]:
        """The partitions currently assigned."""
        ...

    def membership_valid_until(self) -> float | None:
        """Until when (``time.monotonic()``) the group surely still counts this member.

        The group's coordinator drops a member one session timeout after the last heartbeat
        it received; this is the send time of the last confirmed heartbeat (or of the
        assignment) plus the session timeout, less a margin. A member whose event loop
        stalled past it may already have been replaced, though it has not heard so yet.
        ``None`` when membership cannot lapse (no group, or an in-memory bus).
        """
        ...

    async def end_offsets(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        """The offset after the last record of each partition."""
        ...

    async def stop(self) -> None:
        """Leave the group and close."""
        ...


class Bus(Protocol):
    """Creates producers and consumers, and topics."""

    async def ensure_topics(self, topics: Sequence[TopicConfig]) -> None:
        """Create the topics that do not exist yet."""
        ...

    async def partitions(self, topic: str) -> int:
        """Number of partitions of a topic."""
        ...

    def producer(self, *, client_id: str) -> Producer:
        """A new producer (started on first use)."""
        ...

    def consumer(
        self,
        topics: Sequence[str],
        *,
        group: str | None,
        client_id: str,
        on_assigned: RebalanceCallback | None = None,
        on_revoked: RebalanceCallback | None = None,
        partitions: Sequence[TopicPartition] | None = None,
        membership_only: bool = False,
    ) -> Consumer:
        """A consumer of ``topics`` in ``group``; without group it reads every partition.

        ``partitions`` (without group) restricts it to those partitions, read from the start.
        ``membership_only``: the consumer holds its group membership and never reads (a
        lease); on Kafka its partitions are paused, so it sends heartbeats and no fetches.
        """
        ...

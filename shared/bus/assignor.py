"""Co-partitioned, sticky partition assignment for consumer groups.

A stateful service keeps per-key state on the partitioning of its inputs: the state of
partition ``p`` must be owned by the member that handles partition ``p`` of *every* input
topic (Kafka Streams calls this co-partitioning). Kafka's per-topic-partition assignors do
not promise it: aiokafka's sticky assignor balances topic-partitions one by one, and after
a few rebalances a member can hold ``jobs.admitted`` 0 while another holds ``pods.status``
0, both restoring and writing the state of partition 0 (found by the chaos run).

Here members are given partition *numbers*: a member owns number ``p`` in every topic it
subscribes to. Numbers stay with the member that owned them when the balance allows
(sticky), so a standby joining a lease group does not take the lease, and the rest go to
the members with fewest, ties by member id. :func:`plan` is the pure rule; the in-memory
bus uses it directly and :class:`CopartitionedAssignor` gives it to aiokafka.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from aiokafka.coordinator.assignors.abstract import AbstractPartitionAssignor
from aiokafka.coordinator.protocol import (
    ConsumerProtocolMemberAssignment,
    ConsumerProtocolMemberMetadata,
)


def plan(numbers: Iterable[int], owned: Mapping[str, Sequence[int]]) -> dict[str, list[int]]:
    """Share partition numbers among members: balanced, sticky, deterministic.

    Args:
        numbers: the partition numbers to share.
        owned: each member's numbers before the rebalance (empty for a new member).

    Returns:
        Each member's numbers, sorted; counts differ by at most one.
    """
    pool = sorted(set(numbers))
    members = sorted(owned)
    out: dict[str, list[int]] = {member: [] for member in members}
    if not members:
        return out
    base, extra = divmod(len(pool), len(members))
    available = set(pool)
    claims = {member: [p for p in owned[member] if p in available] for member in members}
    taken: set[int] = set()
    for member in members:
        for number in claims[member]:
            if len(out[member]) >= base:
                break
            if number not in taken:
                out[member].append(number)
                taken.add(number)
    for member in members:
        if extra == 0:
            break
        if len(out[member]) != base:
            continue
        spare = next((p for p in claims[member] if p not in taken), None)
        if spare is not None:
            out[member].append(spare)
            taken.add(spare)
            extra -= 1
    for number in pool:
        if number in taken:
            continue
        target = min(members, key=lambda member: (len(out[member]), member))
        out[target].append(number)
        taken.add(number)
    return {member: sorted(numbers) for member, numbers in out.items()}


class CopartitionedAssignor(AbstractPartitionAssignor):  # type: ignore[misc]
    """aiokafka assignor applying :func:`plan`; one instance per consumer.

    Each member sends the numbers it owns in its join metadata (``user_data``, JSON), so
    the leader can keep them where they are.
    """

    name = "vcbus-copartitioned"
    version = 0

    def __init__(self) -> None:
        self.owned: list[int] = []

    def assign(
        self, cluster: Any, members: Mapping[str, ConsumerProtocolMemberMetadata]
    ) -> dict[str, ConsumerProtocolMemberAssignment]:
        """Give every member the same partition numbers in each topic it subscribes to."""
        partitions: dict[str, set[int]] = {}
        for metadata in members.values():
            for topic in metadata.subscription:
                if topic not in partitions:
                    partitions[topic] = set(cluster.partitions_for_topic(topic) or ())
        previous = {member: _owned(metadata.user_data) for member, metadata in members.items()}
        numbers = set().union(*partitions.values()) if partitions else set()
        shares = plan(numbers, previous)
        return {
            member: ConsumerProtocolMemberAssignment(
                self.version,
                sorted(
                    (topic, [p for p in shares[member] if p in partitions[topic]])
                    for topic in set(metadata.subscription)
                ),
                b"",
            )
            for member, metadata in members.items()
        }

    def metadata(self, topics: Iterable[str]) -> ConsumerProtocolMemberMetadata:
        """Subscribed topics, and the numbers this member owns now."""
        return ConsumerProtocolMemberMetadata(
            self.version, sorted(topics), json.dumps({"owned": self.owned}).encode()
        )

    def on_assignment(self, assignment: ConsumerProtocolMemberAssignment) -> None:
        """Remember the numbers just assigned, for the next join."""
        self.owned = sorted({p for _, partitions in assignment.assignment for p in partitions})


def _owned(user_data: bytes | None) -> list[int]:
    if not user_data:
        return []
    try:
        data = json.loads(user_data)
    except ValueError:
        return []
    owned = data.get("owned") if isinstance(data, dict) else None
    if not isinstance(owned, list):
        return []
    return [p for p in owned if isinstance(p, int)]

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
the members with fewest, ties to the leader (the member computing the assignment), then
by member id. The leader is certainly alive and in this generation; a member named
before it may be a killed process whose session has not expired yet, or a new one whose
join is stuck behind an older generation. Given to such a member by name, a lease was
held by nobody for a minute under chaos (seed 1, two CPU hogs: the allocator's standby,
leader of three rebalances in a row, handed the lease each time to a restarted replica
that never completed its join). :func:`plan` is the pure rule; the in-memory bus uses it
directly and :class:`CopartitionedAssignor` gives it to aiokafka.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from aiokafka.coordinator.assignors.abstract import AbstractPartitionAssignor
from aiokafka.coordinator.protocol import (
    ConsumerProtocolMemberAssignment,
    ConsumerProtocolMemberMetadata,
)


def plan(
    numbers: Iterable[int], owned: Mapping[str, Sequence[int]], *, leader: str | None = None
) -> dict[str, list[int]]:
    """Share partition numbers among members: balanced, sticky, deterministic.

    Args:
        numbers: the partition numbers to share.
        owned: each member's numbers before the rebalance (empty for a new member).
        leader: the member computing the assignment, which takes a number nobody keeps
            before the members with as many (``None``: by member id only).

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
        target = min(members, key=lambda member: (len(out[member]), member != leader, member))
        out[target].append(number)
        taken.add(number)
    return {member: sorted(numbers) for member, numbers in out.items()}


class CopartitionedAssignor(AbstractPartitionAssignor):  # type: ignore[misc]
    """aiokafka assignor applying :func:`plan`; one instance per consumer.

    Each member sends the numbers it owns in its join metadata (``user_data``, JSON), so
    the leader can keep them where they are, and a token of its own, so the leader knows
    which member it is.
    """

    name = "vcbus-copartitioned"
    version = 0

    def __init__(self) -> None:
        self.owned: list[int] = []
        self.token = f"{socket.gethostname()}:{os.getpid()}:{id(self)}"
        """Tells this consumer's join metadata apart from the other members'."""

    def assign(
        self, cluster: Any, members: Mapping[str, ConsumerProtocolMemberMetadata]
    ) -> dict[str, ConsumerProtocolMemberAssignment]:
        """Give every member the same partition numbers in each topic it subscribes to."""
        partitions: dict[str, set[int]] = {}
        for metadata in members.values():
            for topic in metadata.subscription:
                if topic not in partitions:
                    partitions[topic] = set(cluster.partitions_for_topic(topic) or ())
        sent = {member: _user_data(metadata.user_data) for member, metadata in members.items()}
        previous = {member: _owned(data) for member, data in sent.items()}
        leader = next(
            (m for m, data in sorted(sent.items()) if data.get("token") == self.token), None
        )
        numbers = set().union(*partitions.values()) if partitions else set()
        shares = plan(numbers, previous, leader=leader)
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
        """Subscribed topics, the numbers this member owns now, and its token."""
        data = {"owned": self.owned, "token": self.token}
        return ConsumerProtocolMemberMetadata(
            self.version, sorted(topics), json.dumps(data).encode()
        )

    def on_assignment(self, assignment: ConsumerProtocolMemberAssignment) -> None:
        """Remember the numbers just assigned, for the next join."""
        self.owned = sorted({p for _, partitions in assignment.assignment for p in partitions})


def _user_data(user_data: bytes | None) -> dict[str, Any]:
    if not user_data:
        return {}
    try:
        data = json.loads(user_data)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _owned(data: Mapping[str, Any]) -> list[int]:
    owned = data.get("owned")
    if not isinstance(owned, list):
        return []
    return [p for p in owned if isinstance(p, int)]

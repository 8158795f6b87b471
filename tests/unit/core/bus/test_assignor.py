"""Co-partitioned, sticky assignment: a member owns partition numbers across all its topics."""

from __future__ import annotations

from collections.abc import Mapping

from aiokafka.coordinator.protocol import (
    ConsumerProtocolMemberAssignment,
    ConsumerProtocolMemberMetadata,
)
from hypothesis import given
from hypothesis import strategies as st

from vcbus.core.bus.assignor import CopartitionedAssignor, plan
from vcbus.core.bus.memory import InMemoryBus
from vcbus.core.bus.records import TopicConfig

TOPICS = ("jobs.admitted", "podgroups.status", "pods.status")


class Cluster:
    """The part of aiokafka's ClusterMetadata an assignor reads."""

    def __init__(self, partitions: Mapping[str, int]) -> None:
        self._partitions = partitions

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        count = self._partitions.get(topic)
        return set(range(count)) if count is not None else None


def numbers_by_topic(assignment: ConsumerProtocolMemberAssignment) -> dict[str, list[int]]:
    return {topic: list(partitions) for topic, partitions in assignment.assignment}


def join(
    assignors: Mapping[str, CopartitionedAssignor], topics: tuple[str, ...], partitions: int
) -> dict[str, ConsumerProtocolMemberAssignment]:
    """One rebalance: every member joins with its metadata; the first one assigns."""
    metadata = {member: assignor.metadata(topics) for member, assignor in assignors.items()}
    leader = assignors[min(assignors)]
    out = leader.assign(Cluster(dict.fromkeys(topics, partitions)), metadata)
    for member, assignment in out.items():
        assignors[member].on_assignment(assignment)
    return out


def test_every_member_owns_the_same_numbers_in_every_topic_when_members_come_and_go() -> None:
    """The chaos run's bug: after rebalances the sticky assignor gave one member
    ``jobs.admitted`` 0 and another ``pods.status`` 0 (both then wrote partition 0's state)."""
    assignors = {"a-1": CopartitionedAssignor(), "b-1": CopartitionedAssignor()}
    rounds = [
        join(assignors, TOPICS, 4),
        join({**assignors, "b-2": CopartitionedAssignor()}, TOPICS, 4),
        join({"a-1": assignors["a-1"], "b-3": CopartitionedAssignor()}, TOPICS, 4),
    ]
    for assignment in rounds:
        owned = [set(map(tuple, numbers_by_topic(a).values())) for a in assignment.values()]
        assert all(len(numbers) <= 1 for numbers in owned), assignment
        numbers = [p for a in assignment.values() for p in next(iter(numbers_by_topic(a).values()))]
        assert sorted(numbers) == [0, 1, 2, 3]


def test_holder_keeps_the_lease_when_a_standby_joins() -> None:
    holder = CopartitionedAssignor()
    join({"z-holder": holder}, ("lease",), 1)
    assignment = join({"z-holder": holder, "a-standby": CopartitionedAssignor()}, ("lease",), 1)
    assert numbers_by_topic(assignment["z-holder"]) == {"lease": [0]}
    assert numbers_by_topic(assignment["a-standby"]) == {"lease": []}


def test_the_leader_takes_a_lease_nobody_keeps_before_a_member_named_before_it() -> None:
    """A member named before the leader may be dead (its session not expired yet) or stuck
    in an older join: the leader, computing the assignment, is alive."""
    assert plan(range(1), {"a-stuck": [], "b-leader": []}, leader="b-leader") == {
        "a-stuck": [],
        "b-leader": [0],
    }
    assert plan(range(1), {"a-stuck": [], "b-leader": []}) == {"a-stuck": [0], "b-leader": []}


def test_the_assigning_member_knows_itself_among_the_members_and_takes_the_free_lease() -> None:
    stuck, leader = CopartitionedAssignor(), CopartitionedAssignor()
    metadata = {
        "allocator-a-1": stuck.metadata(("lease",)),
        "allocator-b-1": leader.metadata(("lease",)),
    }
    out = leader.assign(Cluster({"lease": 1}), metadata)
    assert numbers_by_topic(out["allocator-b-1"]) == {"lease": [0]}
    assert numbers_by_topic(out["allocator-a-1"]) == {"lease": []}


def test_a_holder_keeps_the_lease_whoever_leads() -> None:
    holder, leader = CopartitionedAssignor(), CopartitionedAssignor()
    holder.owned = [0]
    metadata = {"a-holder": holder.metadata(("lease",)), "b-leader": leader.metadata(("lease",))}
    out = leader.assign(Cluster({"lease": 1}), metadata)
    assert numbers_by_topic(out["a-holder"]) == {"lease": [0]}


def test_survivor_takes_every_number_when_the_other_member_is_gone() -> None:
    assert plan(range(4), {"a": [0, 1]}) == {"a": [0, 1, 2, 3]}


def test_members_keep_what_they_owned_when_the_balance_allows() -> None:
    assert plan(range(4), {"a": [0, 1, 2, 3], "b": []}) == {"a": [0, 1], "b": [2, 3]}
    assert plan(range(4), {"a": [2, 3], "b": [0, 1], "c": []}) == {
        "a": [2, 3],
        "b": [0],
        "c": [1],
    }


def test_a_number_claimed_twice_goes_to_one_member_when_two_claim_it() -> None:
    assert plan(range(2), {"a": [0], "b": [0]}) == {"a": [0], "b": [1]}


def test_member_gets_only_topics_it_subscribes_to_when_subscriptions_differ() -> None:
    assignor = CopartitionedAssignor()
    members = {
        "a": ConsumerProtocolMemberMetadata(0, ["x", "y"], b""),
        "b": ConsumerProtocolMemberMetadata(0, ["x"], b"not json"),
    }
    out = assignor.assign(Cluster({"x": 2, "y": 2}), members)
    assert numbers_by_topic(out["a"]) == {"x": [0], "y": [0]}
    assert numbers_by_topic(out["b"]) == {"x": [1]}


@given(
    numbers=st.integers(min_value=0, max_value=12),
    owned=st.dictionaries(
        st.text(alphabet="abcdef", min_size=1, max_size=3),
        st.lists(st.integers(min_value=0, max_value=15), max_size=6),
        min_size=1,
        max_size=5,
    ),
)
def test_every_number_has_one_owner_and_shares_differ_by_one_when_planned(
    numbers: int, owned: dict[str, list[int]]
) -> None:
    shares = plan(range(numbers), owned)
    given_out = sorted(p for share in shares.values() for p in share)
    assert given_out == list(range(numbers))
    sizes = [len(share) for share in shares.values()]
    assert max(sizes) - min(sizes) <= 1


async def test_memory_bus_members_own_the_same_partitions_of_every_topic_when_one_joins() -> None:
    bus = InMemoryBus()
    await bus.ensure_topics([TopicConfig(topic, 4) for topic in TOPICS])
    first = bus.consumer(list(TOPICS), group="g", client_id="first")
    await first.start()
    second = bus.consumer(list(TOPICS), group="g", client_id="second")
    await second.start()
    try:
        for consumer in (first, second):
            by_topic = {
                topic: sorted(tp.partition for tp in consumer.assignment() if tp.topic == topic)
                for topic in TOPICS
            }
            assert len({tuple(numbers) for numbers in by_topic.values()}) == 1, by_topic
            assert len(by_topic[TOPICS[0]]) == 2
    finally:
        await first.stop()
        await second.stop()

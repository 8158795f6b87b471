"""Tags: read with ``tag_of``, explicit and versioned, unique, each on at most one topic."""

from __future__ import annotations

import json
import re
import typing

import msgspec
import pytest

from tests.unit.contracts.samples import EVENT_TYPES, sample
from vcbus.contracts import TOPICS, BindingCreated, Event, JobAdmitted, key_of, tag_of, topic_of
from vcbus.contracts.topics import KEYLESS, TOPIC_BY_TAG, KeyKind, TopicEvent

VERSIONED = re.compile(r"^[a-z]+\.[a-z_]+\.v[1-9][0-9]*$")


def test_tag_of_reads_the_declared_tag() -> None:
    assert tag_of(JobAdmitted) == "job.admitted.v1"


@pytest.mark.parametrize("kind", EVENT_TYPES, ids=lambda kind: kind.__name__)
def test_every_tag_is_explicit_and_versioned(kind: type[Event]) -> None:
    assert tag_of(kind) != kind.__name__
    assert VERSIONED.match(tag_of(kind))


def test_tags_are_unique_when_every_type_is_listed() -> None:
    tags = [tag_of(kind) for kind in EVENT_TYPES]
    assert len(tags) == len(set(tags))


def test_each_type_is_published_on_the_one_topic_whose_union_holds_it() -> None:
    on_topics = 0
    for kind in EVENT_TYPES:
        holders = [spec for spec in TOPICS if kind in members(spec.union)]
        if holders:
            on_topics += 1
            assert [topic_of(sample(kind))] == holders
            assert TOPIC_BY_TAG[tag_of(kind)] is holders[0]
    assert on_topics == len(TOPIC_BY_TAG)


def members(union: object) -> tuple[object, ...]:
    args: tuple[object, ...] | None = getattr(union, "__args__", None)
    return args or (union,)


def by_path(kind: type[Event]) -> Event:
    """A sample of ``kind`` whose every sample string is its field's path (``podgroup.job``)."""

    def mark(value: object, path: str) -> object:
        if isinstance(value, dict):
            return {k: mark(v, f"{path}.{k}".lstrip(".")) for k, v in value.items()}
        if isinstance(value, list):
            return [mark(item, path) for item in value]
        if isinstance(value, str) and value.endswith("-sample"):
            return path
        return value

    marked = mark(json.loads(msgspec.json.encode(sample(kind))), "")
    return msgspec.json.decode(json.dumps(marked), type=kind)


KEY_FIELDS = {
    KeyKind.JOB: lambda kind: {"job", "job_key", "podgroup.job", "pod.job"},
    KeyKind.NODE: lambda kind: (
        {"node", "node.name"} | ({"name"} if kind.__name__.startswith("Node") else set())
    ),
    KeyKind.QUEUE: lambda kind: (
        {"queue.name"} | ({"name"} if kind.__name__.startswith("Queue") else set())
    ),
}
"""Where a key of each kind is read from: the job a record is about (``job_key`` is
``JobAdmitted``'s wire name for it), its node, its queue."""


@pytest.mark.parametrize("kind", EVENT_TYPES, ids=lambda kind: kind.__name__)
def test_every_type_on_a_topic_has_a_key(kind: type[Event]) -> None:
    """The key is the entity the topic table keys the topic by, not only something."""
    if tag_of(kind) in TOPIC_BY_TAG:
        spec = TOPIC_BY_TAG[tag_of(kind)]
        if kind in KEYLESS:
            assert key_of(by_path(kind)) == ""
            return
        assert key_of(by_path(kind)) in KEY_FIELDS[spec.key](kind), spec


def test_the_key_check_tells_a_node_key_from_a_job_key() -> None:
    """A binding keyed by its job (not its node) is caught: the key is the field it came from."""
    binding = by_path(BindingCreated)
    assert isinstance(binding, BindingCreated)
    assert (binding.node, binding.pod.job) == ("node", "pod.job")
    assert binding.pod.job not in KEY_FIELDS[KeyKind.NODE](BindingCreated)
    assert binding.node in KEY_FIELDS[KeyKind.NODE](BindingCreated)


def test_topic_event_is_every_event_on_a_topic() -> None:
    """The union a fold of every topic matches exhaustively holds each topic's events."""
    on_topics = {member for spec in TOPICS for member in members(spec.union)}
    assert set(typing.get_args(TopicEvent)) == on_topics

"""Tags: read with ``tag_of``, explicit and versioned, unique, each on at most one topic."""

from __future__ import annotations

import re

import pytest

from tests.unit.contracts.samples import EVENT_TYPES, sample
from vcbus.contracts import TOPICS, Event, JobAdmitted, key_of, tag_of, topic_of
from vcbus.contracts.topics import TOPIC_BY_TAG

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


@pytest.mark.parametrize("kind", EVENT_TYPES, ids=lambda kind: kind.__name__)
def test_every_type_on_a_topic_has_a_key(kind: type[Event]) -> None:
    if tag_of(kind) in TOPIC_BY_TAG:
        assert key_of(sample(kind))

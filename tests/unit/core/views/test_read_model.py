"""The read side's topics are declared once, by the unions its folds match, and each fold
takes whole topics: an event type added to a topic it reads is one it must fold."""

from __future__ import annotations

import re
import typing

import pytest

from tests.conftest import ROOT
from vcbus.contracts import TOPIC_SPECS, Topic, tag_of
from vcbus.contracts.topics import TOPIC_BY_TAG
from vcbus.core.views import read_model
from vcbus.core.views.jobs import JobFoldEvent
from vcbus.core.views.pod_fold import PodFoldEvent
from vcbus.services.cli import describe, kinds, submit
from vcbus.services.cli import status_store as status
from vcbus.services.cli.dashboard import app

FOLDS = {
    "JobFoldEvent": JobFoldEvent,
    "PodFoldEvent": PodFoldEvent,
    "ClusterFoldEvent": read_model.ClusterFoldEvent,
    "StatusFoldEvent": read_model.StatusFoldEvent,
}


@pytest.mark.parametrize("union", FOLDS.values(), ids=FOLDS.keys())
def test_a_fold_takes_every_event_of_each_topic_it_reads(union: object) -> None:
    for member in typing.get_args(union):
        topic = TOPIC_BY_TAG[tag_of(member)].topic
        assert topic in read_model.folded_topics(union), (member, topic)
        assert set(typing.get_args(TOPIC_SPECS[topic].union)) <= set(typing.get_args(union))


def test_the_readers_read_the_read_models_topics() -> None:
    assert submit.WAIT_TOPICS == read_model.JOB_TOPICS
    assert kinds.KINDS["jobs"].topics == read_model.JOB_TOPICS
    assert status.LATEST_TOPICS | status.POD_TOPICS | {Topic.RESERVATIONS} == set(
        read_model.STORE_TOPICS
    )
    assert set(app.TOPICS) == set(read_model.STORE_TOPICS)
    assert set(describe.TOPICS) == {*read_model.JOB_KEYED_TOPICS, Topic.NODES}
    assert (
        *read_model.JOB_TOPICS,
        *read_model.POD_TOPICS,
        Topic.NODES,
        Topic.RESERVATIONS,
    ) == read_model.STATUS_TOPICS


HAND_KEPT = re.compile(r"\(\s*(Topic\.[A-Z_]+,\s*){4,}")
"""A literal list of four topics or more: a fold's topics written out by hand."""


@pytest.mark.parametrize(
    "path",
    [
        "vcbus/services/cli/describe.py",
        "vcbus/services/cli/status_store.py",
        "vcbus/services/cli/submit.py",
        "vcbus/core/views/live.py",
        "vcbus/services/cli/dashboard/app.py",
    ],
)
def test_no_reader_keeps_a_list_of_the_topics_it_folds(path: str) -> None:
    assert not HAND_KEPT.search((ROOT / path).read_text())

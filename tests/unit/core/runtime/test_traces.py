"""Which job's trace a scheduling cycle's event continues (``vcbus.core.runtime.traces``)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tests.unit.contracts.samples import EVENT_TYPES, sample
from vcbus.contracts import (
    BindingCreated,
    Event,
    JobKey,
    KeyKind,
    NodeName,
    PodEvictionRequested,
    PodKey,
    key_of,
    topic_of,
)
from vcbus.contracts._base import tag_of
from vcbus.contracts.topics import TOPIC_BY_TAG
from vcbus.core.runtime.traces import job_of


def test_an_eviction_continues_the_preemptors_trace_not_the_victims() -> None:
    """The eviction is published in the preemptor's ``allocate <job>`` span."""
    eviction = PodEvictionRequested(
        event_id="e1",
        occurred_at=datetime(2026, 1, 1, tzinfo=UTC),
        pod=PodKey("default/low-w-0"),
        pod_uid="u1",
        job=JobKey("default/low"),
        task="w",
        node=NodeName("n1"),
        reason="Preempted",
        taker="default/high",
        preemptor=JobKey("default/high"),
    )
    assert job_of(eviction) == "default/high"


@pytest.mark.parametrize("kind", EVENT_TYPES, ids=lambda kind: kind.__name__)
def test_every_event_names_the_job_whose_trace_it_continues(kind: type[Event]) -> None:
    """A binding its pod's job, an eviction its preemptor, a job-keyed event its key, else none."""
    if tag_of(kind) not in TOPIC_BY_TAG:
        return
    event = sample(kind)
    if isinstance(event, BindingCreated):
        expected: str | None = event.pod.job
    elif isinstance(event, PodEvictionRequested):
        expected = event.preemptor
    elif topic_of(event).key is KeyKind.JOB:
        expected = key_of(event) or None
    else:
        expected = None
    assert job_of(event) == expected

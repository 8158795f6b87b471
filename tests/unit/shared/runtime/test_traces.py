"""Which job's trace a scheduling cycle's event continues (``vcbus.shared.runtime.traces``)."""

from __future__ import annotations

from datetime import UTC, datetime

from vcbus.contracts import JobKey, NodeName, PodEvictionRequested, PodKey
from vcbus.shared.runtime.traces import job_of


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

"""A job's counts are published once per batch; every phase change is published."""

from __future__ import annotations

from datetime import UTC, datetime

from vcbus.contracts import JobDeleteAccepted, JobStatusChanged, job_key
from vcbus.contracts.objects import JobPhase
from vcbus.core.bus.outbox import Outbox
from vcbus.services.job_controller.job_status import counts_superseded

PREFIX = "unit."
NOW = datetime(2026, 3, 1, tzinfo=UTC)


def _status(
    name: str, n: int, phase: JobPhase, previous: JobPhase | None, running: int
) -> JobStatusChanged:
    return JobStatusChanged(
        event_id=f"{name}-{n}",
        occurred_at=NOW,
        job=job_key("ns", name),
        phase=phase,
        previous_phase=previous,
        running=running,
    )


def _ids(outbox: Outbox) -> list[str]:
    """The ids of the outputs kept, in order, before a key's are joined in one record."""
    return [dict(record.headers)["event-id"].decode() for record, _ in outbox.take_with_sources()]


def test_a_jobs_count_only_status_is_replaced_by_its_later_status_in_the_batch() -> None:
    pending, running = JobPhase.PENDING, JobPhase.RUNNING
    outbox = Outbox(PREFIX, counts_superseded)
    outbox.add_events(
        [
            _status("a", 1, pending, None, 0),  # a phase change (none → Pending): kept
            _status("a", 2, pending, pending, 1),  # counts only, replaced by a-3
            _status("b", 1, running, running, 4),  # counts only, the last of b: kept
            _status("a", 3, running, pending, 2),  # a phase change: kept
            _status("a", 4, running, running, 3),  # counts only, replaced by a-5
            JobDeleteAccepted(event_id="other", occurred_at=NOW, job=job_key("ns", "a")),
            _status("a", 5, running, running, 5),  # the last of a: kept
        ]
    )

    assert _ids(outbox) == ["a-1", "b-1", "a-3", "other", "a-5"]


def test_without_a_rule_every_output_is_published_and_batches_do_not_mix() -> None:
    running = JobPhase.RUNNING
    plain = Outbox(PREFIX)
    plain.add_events([_status("a", 1, running, running, 1), _status("a", 2, running, running, 2)])
    assert _ids(plain) == ["a-1", "a-2"]

    outbox = Outbox(PREFIX, counts_superseded)
    outbox.add_events([_status("a", 1, running, running, 1)])
    assert _ids(outbox) == ["a-1"]
    outbox.add_events([_status("a", 2, running, running, 2)])
    assert _ids(outbox) == ["a-2"]

"""A clear of the rejections that named no job, folded in either order (they may sit on
different partitions), and never of a rejected job that has a name."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from vcbus.contracts import JobKey, JobRejected, RejectionsCleared, SubmissionOrigin, Violation
from vcbus.core.views.jobs import JobFold
from vcbus.core.views.rejections import ClearedRejections

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def origin(offset: int) -> SubmissionOrigin:
    return SubmissionOrigin(topic="p.jobs.submitted", partition=0, offset=offset)


def rejected(offset: int, *, job: str | None = None) -> JobRejected:
    return JobRejected(
        event_id=f"r-{offset}",
        occurred_at=T0 + timedelta(seconds=offset),
        job=JobKey(job) if job else None,
        violations=(Violation(path="", reason="MalformedYaml", message="not YAML"),),
        payload="{",
        origin=origin(offset),
    )


def cleared(at: int, *offsets: int) -> RejectionsCleared:
    return RejectionsCleared(
        event_id=f"c-{at}",
        occurred_at=T0 + timedelta(seconds=at),
        before=T0 + timedelta(seconds=at),
        origins=tuple(origin(o) for o in offsets),
    )


def test_a_clear_takes_what_occurred_before_it_whichever_is_read_first() -> None:
    for order in ((rejected(1), rejected(9), cleared(5)), (cleared(5), rejected(1), rejected(9))):
        fold = JobFold()
        for event in order:
            fold.apply(event)
        assert list(fold.jobs) == ["(unnamed@9)"]
        assert list(fold.unnamed) == ["(unnamed@9)"]


def test_a_clear_by_origin_takes_those_only_and_a_named_rejection_never() -> None:
    fold = JobFold()
    for event in (rejected(1), rejected(2), rejected(3, job="default/bad"), cleared(5, 2, 3)):
        fold.apply(event)
    assert sorted(fold.jobs) == ["(unnamed@1)", "default/bad"]
    assert fold.jobs["default/bad"].phase == "Rejected"


def test_the_latest_clear_of_all_wins_and_origins_keep_their_own_time() -> None:
    state = ClearedRejections()
    for event in (cleared(8), cleared(3), cleared(2, 20)):
        state.apply(event)
    assert state.before == T0 + timedelta(seconds=8)
    assert state.clears(rejected(8))
    assert not state.clears(rejected(9))
    assert not state.clears(rejected(20))  # read there, but after that clear

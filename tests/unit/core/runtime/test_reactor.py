"""The reactor: per-key state, dedup by event id, deadlines fired as ticks, traces kept."""

from __future__ import annotations

from datetime import datetime, timedelta

from opentelemetry import trace

from vcbus.contracts import JobDeleteAccepted, JobDeleted, JobKey, derive_event_id
from vcbus.core.bus.outbox import Outbox
from vcbus.core.runtime.clock import EPOCH, VirtualClock
from vcbus.core.runtime.reactor import Entry, Reactor
from vcbus.core.state.changelog import ChangelogStore
from vcbus.core.step import Ctx, Step, Tick
from vcbus.core.tracing.spans import business_span

DELAY = timedelta(seconds=5)


def _core(state: int | None, event: object, ctx: Ctx) -> Step[int | None]:
    """Counts inputs; a tick emits one JobDeleted for the key (as a policy timeout would)."""
    if isinstance(event, Tick):
        return Step(
            -1,
            (
                JobDeleted(
                    event_id=derive_event_id("tick", "ns/j", ctx.now.isoformat()),
                    occurred_at=ctx.now,
                    job=JobKey("ns/j"),
                ),
            ),
        )
    assert isinstance(event, JobDeleteAccepted)
    out = JobDeleted(
        event_id=derive_event_id("out", event.job, event.event_id),
        occurred_at=ctx.now,
        job=event.job,
    )
    return Step((state or 0) + 1, (out,))


def _deadline(state: int | None) -> datetime | None:
    return EPOCH + DELAY if state and state > 0 else None


def _input(n: int) -> JobDeleteAccepted:
    return JobDeleteAccepted(
        event_id=derive_event_id("in", "ns/j", n),
        occurred_at=EPOCH,
        job=JobKey("ns/j"),
    )


def _reactor(
    clock: VirtualClock,
) -> tuple[Reactor[int, JobDeleteAccepted], ChangelogStore[Entry[int]]]:
    store = ChangelogStore[Entry[int]]("t", Entry[int])
    store.bind("t.changelog")
    return Reactor[int, JobDeleteAccepted](_core, store, clock, next_deadline=_deadline), store


def test_redelivered_event_changes_nothing_and_emits_nothing_when_applied_twice(
    clock: VirtualClock,
) -> None:
    reactor, store = _reactor(clock)
    first = reactor.apply(0, "ns/j", _input(1), _input(1).event_id)
    again = reactor.apply(0, "ns/j", _input(1), _input(1).event_id)

    assert len(first) == 1
    assert again == ()
    assert store.get(0, "ns/j") is not None
    assert store.get(0, "ns/j").state == 1  # type: ignore[union-attr]


def test_state_changes_are_written_to_the_changelog_when_flushed(clock: VirtualClock) -> None:
    reactor, store = _reactor(clock)
    reactor.apply(2, "ns/j", _input(1), _input(1).event_id)

    (record,) = store.take_writes()

    assert (record.topic, record.partition, record.key) == ("t.changelog", 2, b"ns/j")
    assert store.take_writes() == []


async def test_tick_reaches_the_key_when_its_deadline_comes(clock: VirtualClock) -> None:
    reactor, store = _reactor(clock)
    reactor.apply(0, "ns/j", _input(1), _input(1).event_id)
    outbox = Outbox("p.")

    assert reactor.next_due() == clock.now() + DELAY
    await reactor.fire(clock.now(), outbox)
    assert len(outbox) == 0

    clock.advance(DELAY.total_seconds())
    await reactor.fire(clock.now(), outbox)

    assert len(outbox.take()) == 1
    assert store.get(0, "ns/j").state == -1  # type: ignore[union-attr]
    assert reactor.next_due() is None


async def test_tick_output_continues_the_trace_of_the_jobs_last_input(
    clock: VirtualClock, spans
) -> None:
    reactor, _ = _reactor(clock)
    with business_span("handler") as handler:
        reactor.apply(0, "ns/j", _input(1), _input(1).event_id)
    clock.advance(DELAY.total_seconds())
    outbox = Outbox("p.")

    await reactor.fire(clock.now(), outbox)
    outbox.take()

    sends = [span for span in spans.get_finished_spans() if span.name.startswith("send ")]
    assert len(sends) == 1
    assert sends[0].context.trace_id == handler.get_span_context().trace_id
    assert sends[0].parent is not None
    assert sends[0].parent.span_id == handler.get_span_context().span_id
    assert not trace.get_current_span().get_span_context().is_valid

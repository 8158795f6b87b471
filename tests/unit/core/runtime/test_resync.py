"""The resync sweep: every key that may have a step due is given one, boundedly, idempotently.

A core acts on its inputs; the sweep re-derives from the state alone what is due, so a
step whose input was lost still happens within ``every × ceil(keys / limit)`` seconds.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from vcbus.contracts import JobDeleteAccepted, JobKey
from vcbus.core.bus.batch import events_in
from vcbus.core.bus.outbox import Outbox
from vcbus.core.runtime.clock import VirtualClock
from vcbus.core.runtime.reactor import Entry, Reactor, Resync
from vcbus.core.state.changelog import ChangelogStore
from vcbus.core.step import Ctx, Step, Tick

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def announce(key: str, n: int) -> JobDeleteAccepted:
    return JobDeleteAccepted(event_id=f"{key}-{n}", occurred_at=T0, job=JobKey(key))


def owed(state: tuple[int, int] | None, event: object, _ctx: Ctx) -> Step[tuple[int, int] | None]:
    """State ``(wanted, done)``: a resync does the steps owed, one event each."""
    assert state is not None
    assert isinstance(event, Tick)
    assert event.resync
    wanted, done = state
    if done >= wanted:
        return Step(state)
    return Step((wanted, wanted), tuple(announce("ns/k", n) for n in range(done, wanted)))


def build(
    states: dict[str, tuple[int, int]], *, limit: int = 1000
) -> tuple[VirtualClock, ChangelogStore[Entry[tuple[int, int]]], Reactor[tuple[int, int], object]]:
    clock = VirtualClock(T0)
    store = ChangelogStore[Entry[tuple[int, int]]]("s", Entry[tuple[int, int]])
    store.bind("t.s.changelog")
    for key, state in states.items():
        store.put(0, key, Entry[tuple[int, int]](state=state))
    store.take_writes()
    reactor = Reactor[tuple[int, int], object](
        owed,
        store,
        clock,
        resync=Resync(10.0, lambda state: state[1] < state[0], limit=limit),
    )
    return clock, store, reactor


async def sweep(reactor: Reactor[tuple[int, int], object], clock: VirtualClock) -> list[str]:
    outbox = Outbox("t.")
    await reactor.fire(clock.now(), outbox)
    return [
        (record.key or b"").decode()
        for record in outbox.take()
        for _ in range(events_in(record))  # a key's events of one sweep share a record
    ]


async def test_a_step_whose_input_was_lost_is_taken_at_the_next_sweep_and_only_once() -> None:
    clock, store, reactor = build({"ns/k": (2, 0), "ns/done": (1, 1)})

    assert await sweep(reactor, clock) == []  # the first call arms the sweep
    clock.advance(9.9)
    assert await sweep(reactor, clock) == []
    clock.advance(0.1)
    assert await sweep(reactor, clock) == ["ns/k", "ns/k"]
    assert store.get(0, "ns/k") == Entry[tuple[int, int]](state=(2, 2))
    clock.advance(10)
    assert await sweep(reactor, clock) == []


async def test_a_sweep_that_finds_nothing_due_keeps_and_writes_nothing() -> None:
    clock, store, reactor = build({"ns/a": (1, 1), "ns/b": (3, 3)})
    await sweep(reactor, clock)
    clock.advance(10)

    assert await sweep(reactor, clock) == []
    assert not store.has_writes()


async def test_a_sweep_visits_at_most_limit_keys_and_the_next_one_goes_on_from_there() -> None:
    keys = [f"ns/j{i}" for i in range(5)]
    clock, store, reactor = build(dict.fromkeys(keys, (1, 0)), limit=2)
    await sweep(reactor, clock)
    done: list[list[str]] = []
    for _ in range(3):
        clock.advance(10)
        await sweep(reactor, clock)
        done.append([key for key in keys if store.get(0, key) == Entry(state=(1, 1))])

    assert [len(d) for d in done] == [2, 4, 5]


async def test_a_key_whose_deadline_passed_unfired_is_ticked_by_the_sweep() -> None:
    """A deadline whose timer was lost (the heap is memory) is re-armed by the sweep."""
    clock = VirtualClock(T0)
    store = ChangelogStore[Entry[int]]("s", Entry[int])
    store.bind("t.s.changelog")
    store.put(0, "ns/k", Entry[int](state=1, deadline=T0 + timedelta(seconds=1)))
    ticks: list[Tick] = []

    def core(state: int | None, event: object, _ctx: Ctx) -> Step[int | None]:
        assert isinstance(event, Tick)
        ticks.append(event)
        return Step(state)

    reactor = Reactor[int, object](core, store, clock, resync=Resync(10.0))
    await reactor.fire(clock.now(), Outbox("t."))
    clock.advance(10)
    await reactor.fire(clock.now(), Outbox("t."))

    assert ticks == [Tick(now=T0 + timedelta(seconds=10), resync=True)]

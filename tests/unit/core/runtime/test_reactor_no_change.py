"""The reactor remembers the ids of inputs that changed something or were taken, not others.

An input a state cannot take yet (it changes nothing) may be read again later, when a
newer state takes it; remembering its id would drop it then.
"""

from __future__ import annotations

from datetime import UTC, datetime

from vcbus.contracts import JobDeleteAccepted, JobKey
from vcbus.core.runtime.clock import VirtualClock
from vcbus.core.runtime.reactor import Entry, Reactor
from vcbus.core.state.changelog import ChangelogStore
from vcbus.core.step import Ctx, Step, Tick

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def event(n: int) -> JobDeleteAccepted:
    return JobDeleteAccepted(event_id=f"e{n}", occurred_at=T0, job=JobKey("ns/a"))


def test_an_input_that_changed_nothing_is_applied_when_read_again_after_the_state_moved() -> None:
    ready = {"value": False}

    def core(state: int | None, _event: object, _ctx: Ctx) -> Step[int | None]:
        if not ready["value"]:
            return Step(state)
        return Step((state or 0) + 1)

    store = ChangelogStore[Entry[int]]("counts", Entry[int])
    store.bind("t.counts.changelog")
    reactor = Reactor[int, JobDeleteAccepted](core, store, VirtualClock())
    reactor.apply(0, "ns/a", event(0), "e0")  # creates nothing: state stays None
    store.put(0, "ns/a", Entry[int](state=5))
    assert reactor.apply(0, "ns/a", event(1), "e1") == ()
    assert store.get(0, "ns/a") == Entry[int](state=5)

    ready["value"] = True
    reactor.apply(0, "ns/a", event(1), "e1")
    assert store.get(0, "ns/a") == Entry[int](state=6, seen=("e1",))
    reactor.apply(0, "ns/a", event(1), "e1")  # now remembered: a duplicate is dropped
    assert store.get(0, "ns/a") == Entry[int](state=6, seen=("e1",))


def test_an_input_taken_without_a_change_is_skipped_when_read_again_after_the_state_moved() -> None:
    def core(state: int | None, event: JobDeleteAccepted | Tick, _ctx: Ctx) -> Step[int | None]:
        assert isinstance(event, JobDeleteAccepted)
        if event.event_id == "e0":
            return Step(state, taken=True)  # a fact the state holds already
        return Step((state or 0) + 1)

    store = ChangelogStore[Entry[int]]("counts", Entry[int])
    store.bind("t.counts.changelog")
    reactor = Reactor[int, JobDeleteAccepted](core, store, VirtualClock())
    store.put(0, "ns/a", Entry[int](state=5))
    assert reactor.apply(0, "ns/a", event(0), "e0") == ()
    assert store.get(0, "ns/a") == Entry[int](state=5, seen=("e0",))
    reactor.apply(0, "ns/a", event(1), "e1")
    reactor.apply(0, "ns/a", event(0), "e0")
    assert store.get(0, "ns/a") == Entry[int](state=6, seen=("e0", "e1"))

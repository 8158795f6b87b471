"""react(): turns a pure ``decide(state, event, ctx) -> Step`` into a keyed, idempotent handler.

For each record it takes the key, gets the state from the changelog store, calls
``decide``, stores the new state and returns the events to publish. A step whose state or
events would be over the record limit is refused before anything is kept
(docs/design.md#bounded-records: the input goes to its ``.DLT``, the key keeps its state). The store
entry keeps the ids of the last events applied, so a redelivered event changes nothing and emits
nothing (the one duplicate check of vcbus: cores do not keep ids; an event is applied
once it changed the state, emitted, or its step says ``taken``); and the deadline the
core asked for, so a ``Tick`` reaches it on time.

What a ``Tick`` emits continues the trace of the job each event is about: the reactor
remembers, per job, the span that handled the job's last input (in memory: after a
restart, a tick's events start traces of their own until the job's next input).
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Generic, TypeAlias, TypeVar

import msgspec
import structlog
from opentelemetry import trace
from opentelemetry.trace import NonRecordingSpan, SpanContext

from vcbus.contracts._base import Event
from vcbus.contracts.limits import MAX_EVENT_BYTES
from vcbus.contracts.topics import key_of
from vcbus.core.bus.codec import encode
from vcbus.core.bus.envelope import Envelope
from vcbus.core.bus.errors import RecordTooLargeError
from vcbus.core.bus.outbox import Outbox
from vcbus.core.runtime.clock import Clock
from vcbus.core.state.changelog import ChangelogStore
from vcbus.core.step import Ctx, Step, Tick
from vcbus.core.tracing.spans import current_trace_id

S = TypeVar("S")
E = TypeVar("E")

log = structlog.get_logger("vcbus.reactor")

SEEN_LIMIT = 512
"""How many applied event ids a key remembers (redeliveries come soon after the original)."""

RESYNC_LIMIT = 1000
"""Keys a resync sweep visits at most (``Resync``): the sweep's cost is bounded."""

TRACED_LIMIT = 10_000
"""How many jobs' latest span contexts a reactor keeps for its ticks (oldest dropped first)."""


class Entry(msgspec.Struct, Generic[S], frozen=True, kw_only=True):
    """What the store keeps per key: the core's state, recent event ids, the next deadline."""

    state: S | None = None
    seen: tuple[str, ...] = ()
    deadline: datetime | None = None


Decide: TypeAlias = Callable[[S | None, E | Tick, Ctx], Step[S | None]]
"""A pure core: the key's state (``None`` when it has none), an input or a ``Tick``, ``ctx``."""
Deadline: TypeAlias = Callable[[S], datetime | None]
"""When a state wants its next ``Tick``, if ever."""


@dataclass(frozen=True, slots=True)
class Resync(Generic[S]):
    """A periodic, bounded sweep of the keys held (Kubernetes' informer resync).

    Every ``every`` seconds the reactor visits at most ``limit`` keys whose state
    ``pending`` says may still have a step to take (a job not final), the next ones in
    key order after where the last sweep stopped, and gives each a ``Tick`` with
    ``resync`` set (a key whose deadline has passed gets it as well, whatever
    ``pending`` says). The core re-derives what is due from the state; a step that
    changes nothing keeps nothing and publishes nothing, and what it does publish has the
    ids the event-driven step would have given. So a key with a step due gets it at most
    ``every × ceil(pending keys / limit)`` seconds later, whatever input was lost.
    """

    every: float
    pending: Callable[[S], bool] | None = None
    """``None``: no state calls for a step but at its deadline (the sweep re-arms lost ones)."""
    limit: int = RESYNC_LIMIT


def _check_fits(key: str, records: Sequence[bytes], emitted: Sequence[Event]) -> None:
    """Refuse a step whose state or events could not be written, before keeping it.

    ``records`` are the state's changelog records as the store encodes them (none when the
    core returned the state it was given: its size is then known to fit, only the bounded
    list of event ids grew).

    Raises:
        RecordTooLargeError: a record of the state or an event is over
            :data:`vcbus.contracts.limits.MAX_EVENT_BYTES`; the router sends the input to its
            ``.DLT`` and the key keeps its previous state.
    """
    size = max((len(record) for record in records), default=0)
    if size > MAX_EVENT_BYTES:
        raise RecordTooLargeError(
            f"the state of {key} would be {size} bytes; the limit is {MAX_EVENT_BYTES} bytes"
        )
    for event in emitted:
        size = len(encode(event))
        if size > MAX_EVENT_BYTES:
            raise RecordTooLargeError(
                f"{type(event).__name__} of {key} would be {size} bytes; "
                f"the limit is {MAX_EVENT_BYTES} bytes"
            )


class Reactor(Generic[S, E]):
    """A keyed handler over a pure core, with per-key deadlines fired as ``Tick`` events.

    ``S`` is the core's state per key, ``E`` the inputs its routes deliver (a ``Tick``
    comes besides).
    """

    def __init__(
        self,
        decide: Decide[S, E],
        store: ChangelogStore[Entry[S]],
        clock: Clock,
        *,
        next_deadline: Deadline[S] | None = None,
        resync: Resync[S] | None = None,
    ) -> None:
        self._decide = decide
        self._store = store
        self._clock = clock
        self._next_deadline = next_deadline
        self._timers: list[tuple[datetime, int, str]] = []
        self._traces: dict[str, SpanContext] = {}
        self._resync = resync
        self._next_sweep: datetime | None = None
        self._swept: tuple[int, str] | None = None
        """The last key the previous sweep visited (the next one starts after it)."""

    def rebuild_timers(self) -> None:
        """Re-read deadlines from the store (after a restore or a rebalance)."""
        self._timers = [
            (entry.deadline, partition, key)
            for partition, key, entry in self._store.items()
            if entry.deadline is not None
        ]
        heapq.heapify(self._timers)

    def apply(
        self, partition: int, key: str, event: E | Tick, event_id: str | None
    ) -> Sequence[Event]:
        """Apply one input to the state of ``key`` in ``partition``; return what to publish."""
        entry = self._store.get(partition, key) or Entry[S]()
        if event_id and event_id in entry.seen:
            return ()
        ctx = Ctx(now=self._clock.now(), trace_id=current_trace_id())
        step = self._decide(entry.state, event, ctx)
        seen = (*entry.seen, event_id)[-SEEN_LIMIT:] if event_id else entry.seen
        deadline = (
            self._next_deadline(step.state)
            if self._next_deadline and step.state is not None
            else None
        )
        if step.state is None and not step.emit and entry.state is None:
            return ()
        if step.state is entry.state and not step.emit and not step.taken:
            # Nothing changed: the id is not remembered, so the same event read again
            # later (a newer state may take it: a restarted job's new PodGroup) is applied.
            return ()
        new_entry = Entry[S](state=step.state, seen=seen, deadline=deadline)
        same = step.state is entry.state
        encoded = None if same else self._store.encode(new_entry)
        _check_fits(key, encoded or (), step.emit)
        self._remember_trace(step.emit)
        self._store.put(partition, key, new_entry, encoded=encoded)
        if deadline is not None and deadline != entry.deadline:
            heapq.heappush(self._timers, (deadline, partition, key))
        return step.emit

    async def handle(self, envelope: Envelope[Any]) -> Sequence[Event]:
        """Apply one event to the state of its key."""
        event = envelope.event
        event_id = event.event_id if isinstance(event, Event) else None
        return self.apply(envelope.partition, envelope.key or "", event, event_id)

    def next_due(self) -> datetime | None:
        """The earliest deadline of any key held (the sweep is no deadline: see ``fire``)."""
        while self._timers:
            deadline, partition, key = self._timers[0]
            entry = self._store.get(partition, key)
            if entry is not None and entry.deadline == deadline:
                return deadline
            heapq.heappop(self._timers)
        return None

    async def fire(self, now: datetime, outbox: Outbox) -> None:
        """Deliver a ``Tick`` to every key whose deadline has come; queue what it emits.

        Each event is sent under the span that handled its job's last input, so a pod's
        Running and Succeeded stay in its job's trace.
        """
        while (due := self.next_due()) is not None and due <= now:
            _, partition, key = heapq.heappop(self._timers)
            self._tick(partition, key, Tick(now=now), outbox)
        if self._resync is None:
            return
        if self._next_sweep is None:
            self._next_sweep = now + timedelta(seconds=self._resync.every)
        elif self._next_sweep <= now:
            self._sweep(now, outbox)

    def _sweep(self, now: datetime, outbox: Outbox) -> None:
        """Tick, with ``resync``, the next keys that may have a step due (``Resync``)."""
        resync = self._resync
        assert resync is not None
        self._next_sweep = now + timedelta(seconds=resync.every)
        held = [
            (partition, key, entry)
            for partition, key, entry in self._store.items()
            if entry.state is not None
            and (
                (resync.pending is not None and resync.pending(entry.state))
                or (entry.deadline is not None and entry.deadline <= now)
            )
        ]
        start = 0
        if self._swept is not None:
            start = next((i for i, (p, k, _) in enumerate(held) if (p, k) > self._swept), len(held))
        if start >= len(held):
            start = 0
        visited = held[start : start + resync.limit]
        before = len(outbox)
        for partition, key, _ in visited:
            self._tick(partition, key, Tick(now=now, resync=True), outbox)
        self._swept = (visited[-1][0], visited[-1][1]) if visited else None
        published = len(outbox) - before
        # a sweep that publishes found a step its input had not triggered: worth a line
        (log.warning if published else log.debug)(
            "resync_swept", keys=len(visited), pending=len(held), published=published
        )

    def _tick(self, partition: int, key: str, tick: Tick, outbox: Outbox) -> None:
        try:
            emitted = self.apply(partition, key, tick, None)
        except RecordTooLargeError as exc:
            # no input to dead-letter: the key keeps its state until its next input
            log.error("tick_refused", key=key, error=str(exc))
            return
        for job, events in itertools.groupby(emitted, key=key_of):
            with self._continuing(job):
                outbox.add_events(events)

    def _remember_trace(self, emitted: Sequence[Event]) -> None:
        """Note the current span (a record's handler) for the jobs of ``emitted``."""
        current = trace.get_current_span().get_span_context()
        if not current.is_valid:
            return
        for event in emitted:
            job = key_of(event)
            self._traces.pop(job, None)
            self._traces[job] = current
        while len(self._traces) > TRACED_LIMIT:
            del self._traces[next(iter(self._traces))]

    @contextlib.contextmanager
    def _continuing(self, job: str) -> Iterator[None]:
        remembered = self._traces.get(job)
        if remembered is None:
            yield
            return
        with trace.use_span(NonRecordingSpan(remembered), end_on_exit=False):
            yield

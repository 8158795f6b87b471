"""What every pure core takes and returns: ``decide(state, event, ctx) -> Step``.

This module does no I/O; shells build a :class:`Ctx` from their clock and seed, call a
core, then publish ``Step.emit`` and store ``Step.state``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime
from typing import Generic, TypeVar

from vcbus.contracts._base import Event

S = TypeVar("S")


@dataclass(frozen=True, slots=True)
class Ctx:
    """The outside world a core may see.

    ``now`` is the clock's time; ``trace_id`` the trace of the record being handled (hex,
    empty when none), for cores that report it in status events; ``rng`` a seeded random
    source, for simulation only.
    """

    now: datetime
    trace_id: str = ""
    rng: random.Random | None = None


@dataclass(frozen=True, slots=True)
class Tick:
    """Time passed: the input a core receives when one of its deadlines is due.

    ``resync`` marks the tick of a periodic sweep (Kubernetes' resync): the core
    re-derives from its state whatever step is due, in case the input that should have
    triggered it was lost; a core with nothing due returns its state unchanged.
    """

    now: datetime
    resync: bool = False


@dataclass(frozen=True, slots=True)
class Step(Generic[S]):
    """A core's answer: the new state and the events to publish (in order).

    ``taken`` says the core took the input though neither its state nor its events show
    it (a fact the state already holds): the shell remembers the input's id all the same,
    so a redelivery is skipped. A step that changed the state or emitted events took its
    input anyway; one that did neither and is not ``taken`` did not, and the same input
    read again later is applied (a newer state may take it).
    """

    state: S
    emit: tuple[Event, ...] = ()
    taken: bool = False

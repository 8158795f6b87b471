"""The job's pods at a glance: where each is, and how many are in each phase, per task.

Every input of a job asks the same questions of its pods: which one is called so, how
many of each task are in each phase, whether a pod is missing, whether a binding was
refused, how often live pods restarted. Asked by walking the pods, each question costs a
pass over all of them, and a job of 10,000 pods takes as many inputs, so the job would
cost 10,000² steps. :func:`summary` answers them once per pods tuple, and
:func:`replace_pod` derives the answers for the tuple with one pod replaced from its
predecessor's in time independent of the number of pods.

As :mod:`vcbus.services.job_controller.derived`, the memo is a cache, not state: it is keyed on
the tuple's identity (holding the tuple, so the identity stays unique), and a miss
computes the same answers from the pods, so decisions never depend on what it holds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol, TypeVar

from vcbus.contracts.objects.pod import PodPhase


class PodState(Protocol):
    """What the index reads of a pod (``state.PodState`` has it), so it imports no state."""

    @property
    def name(self) -> str: ...  # noqa: D102
    @property
    def task(self) -> str: ...  # noqa: D102
    @property
    def index(self) -> int: ...  # noqa: D102
    @property
    def phase(self) -> PodPhase: ...  # noqa: D102
    @property
    def restarts(self) -> int: ...  # noqa: D102
    @property
    def refused(self) -> bool: ...  # noqa: D102


P = TypeVar("P", bound=PodState)

MEMO_LIMIT = 64
"""How many pods tuples the memo keeps (the oldest goes first): those of the jobs in the
batch being handled."""

PENDING, RUNNING, SUCCEEDED, FAILED, UNKNOWN = range(5)
"""Positions of the per-task phase counts."""

_SLOT = {
    PodPhase.PENDING: PENDING,
    PodPhase.RUNNING: RUNNING,
    PodPhase.SUCCEEDED: SUCCEEDED,
    PodPhase.FAILED: FAILED,
}
_LIVE = (PodPhase.RUNNING, PodPhase.PENDING)


@dataclass(frozen=True, slots=True)
class PodSummary:
    """What a job's pods say, all at once.

    Attributes:
        positions: pod name → its position in the pods tuple.
        counts: task → pods in each phase (pending, running, succeeded, failed, unknown).
        slots: how many distinct (task, index) the pods hold.
        top: task → the highest index of its pods.
        refused: how many pods wait after a refused binding.
        live_restarts: task → restarts of its Pending and Running pods.
    """

    positions: Mapping[str, int]
    counts: Mapping[str, tuple[int, int, int, int, int]]
    slots: int
    top: Mapping[str, int]
    refused: int
    live_restarts: Mapping[str, int]


_memo: dict[int, tuple[tuple[PodState, ...], PodSummary]] = {}


def _remember(pods: tuple[PodState, ...], found: PodSummary) -> PodSummary:
    if len(_memo) >= MEMO_LIMIT:
        del _memo[next(iter(_memo))]
    _memo[id(pods)] = (pods, found)
    return found


def summary(pods: tuple[PodState, ...]) -> PodSummary:
    """The summary of ``pods`` (from the memo, or computed in one pass)."""
    held = _memo.get(id(pods))
    if held is not None and held[0] is pods:
        return held[1]
    positions: dict[str, int] = {}
    counts: dict[str, list[int]] = {}
    slots: set[tuple[str, int]] = set()
    top: dict[str, int] = {}
    restarts: dict[str, int] = {}
    refused = 0
    for position, pod in enumerate(pods):
        positions[pod.name] = position
        counts.setdefault(pod.task, [0, 0, 0, 0, 0])[_SLOT.get(pod.phase, UNKNOWN)] += 1
        slots.add((pod.task, pod.index))
        top[pod.task] = max(top.get(pod.task, pod.index), pod.index)
        refused += pod.refused
        if pod.restarts and pod.phase in _LIVE:
            restarts[pod.task] = restarts.get(pod.task, 0) + pod.restarts
    return _remember(
        pods,
        PodSummary(
            positions=positions,
            counts={task: (c[0], c[1], c[2], c[3], c[4]) for task, c in counts.items()},
            slots=len(slots),
            top=top,
            refused=refused,
            live_restarts=restarts,
        ),
    )


def _restarts(pod: PodState) -> int:
    return pod.restarts if pod.phase in _LIVE else 0


def replace_pod(pods: tuple[P, ...], new: P) -> tuple[P, ...]:
    """``pods`` with the pod named as ``new`` replaced by it (same task and index).

    Its summary is derived from ``pods``' own, without a pass over the pods.

    Raises:
        KeyError: no pod is called so.
    """
    before = summary(pods)
    position = before.positions[new.name]
    old = pods[position]
    if (old.task, old.index) != (new.task, new.index):
        raise ValueError(f"pod {new.name} would move from {old.task}/{old.index}")
    replaced = (*pods[:position], new, *pods[position + 1 :])
    counts = dict(before.counts)
    task = list(counts[new.task])
    task[_SLOT.get(old.phase, UNKNOWN)] -= 1
    task[_SLOT.get(new.phase, UNKNOWN)] += 1
    counts[new.task] = (task[0], task[1], task[2], task[3], task[4])
    restarts = dict(before.live_restarts)
    change = _restarts(new) - _restarts(old)
    if change:
        restarts[new.task] = restarts.get(new.task, 0) + change
    _remember(
        replaced,
        PodSummary(
            positions=before.positions,
            counts=counts,
            slots=before.slots,
            top=before.top,
            refused=before.refused + new.refused - old.refused,
            live_restarts=restarts,
        ),
    )
    return replaced

"""The summary of a simulated schedule: makespan, per-queue use and share, utilisation.

Pure arithmetic over what :class:`vcbus.services.simulation.outcome.Outcome` folded: each pod's
requests and the interval it ran (Running until it ended, or until the run stopped), each
job's queue and finish time, and the cluster's capacity as it changed. Amounts are in
whole units: cpu and extended resources in cores / devices (base milli-units / 1000),
memory and storage in bytes, ``pods`` as a count.

Windows of ``WINDOW_SECONDS`` show how the queues shared the cluster over time: per
window, each queue's part of the resource-seconds the queues used, and how much of the
capacity was used. At most ``MAX_WINDOWS`` windows are kept (docs/design.md#bounded-records), the
first ones.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from vcbus.contracts.quantity import units_per_whole

WINDOW_SECONDS = 60.0
MAX_WINDOWS = 240
DIGITS = 4


@dataclass(frozen=True, slots=True)
class Usage:
    """One pod's requests (base units) held by ``queue`` from ``start`` to ``end`` seconds."""

    queue: str
    requests: Mapping[str, int]
    start: float
    end: float


@dataclass(frozen=True, slots=True)
class CapacityStep:
    """From ``at`` seconds on, the cluster holds ``allocatable`` (base units, summed)."""

    at: float
    allocatable: Mapping[str, int]


def whole_units(name: str, amount: float) -> float:
    """A base-unit amount in whole units (cores, devices, bytes, pods)."""
    return amount / units_per_whole(name)


def _overlap(start: float, end: float, lo: float, hi: float) -> float:
    return max(0.0, min(end, hi) - max(start, lo))


def _add(out: dict[str, dict[str, float]], usage: Usage, seconds: float) -> None:
    """Add what ``usage`` held for ``seconds`` to ``out`` (queue → resource → amount)."""
    queue = out.setdefault(usage.queue, {})
    for name, amount in usage.requests.items():
        if name == "pods":
            continue
        queue[name] = queue.get(name, 0.0) + whole_units(name, amount) * seconds


def _resource_seconds(usages: Iterable[Usage], lo: float, hi: float) -> dict[str, dict[str, float]]:
    """Queue → resource → resource-seconds held within ``[lo, hi)``."""
    out: dict[str, dict[str, float]] = {}
    for usage in usages:
        seconds = _overlap(usage.start, usage.end, lo, hi)
        if seconds > 0:
            _add(out, usage, seconds)
    return out


def _window_bounds(end: float) -> list[tuple[float, float]]:
    """The windows' ``[lo, hi)``: ``WINDOW_SECONDS`` each from 0 to ``end``, the first ones.

    At most ``MAX_WINDOWS`` (docs/design.md#bounded-records).
    """
    bounds: list[tuple[float, float]] = []
    lo = 0.0
    while lo < end and len(bounds) < MAX_WINDOWS:
        hi = min(lo + WINDOW_SECONDS, end)
        bounds.append((lo, hi))
        lo = hi
    return bounds


def _windowed_resource_seconds(
    usages: Iterable[Usage], bounds: Sequence[tuple[float, float]]
) -> list[dict[str, dict[str, float]]]:
    """``_resource_seconds`` of each window, in one pass over the usages.

    Each window's sums are added in the usages' order, as a pass per window would, so the
    figures are the same to the last digit; a usage visits only the windows it overlaps.
    """
    out: list[dict[str, dict[str, float]]] = [{} for _ in bounds]
    his = [hi for _, hi in bounds]
    for usage in usages:
        index = bisect.bisect_right(his, usage.start)
        while index < len(bounds) and bounds[index][0] < usage.end:
            lo, hi = bounds[index]
            seconds = _overlap(usage.start, usage.end, lo, hi)
            if seconds > 0:
                _add(out[index], usage, seconds)
            index += 1
    return out


def _capacity_seconds(steps: Sequence[CapacityStep], lo: float, hi: float) -> dict[str, float]:
    out: dict[str, float] = {}
    for index, step in enumerate(steps):
        until = steps[index + 1].at if index + 1 < len(steps) else hi
        seconds = _overlap(step.at, until, lo, hi)
        for name, amount in step.allocatable.items():
            out[name] = out.get(name, 0.0) + whole_units(name, amount) * seconds
    return out


def _shares(used: Mapping[str, Mapping[str, float]]) -> dict[str, dict[str, float]]:
    totals: dict[str, float] = {}
    for amounts in used.values():
        for name, amount in amounts.items():
            totals[name] = totals.get(name, 0.0) + amount
    return {
        queue: {
            name: round(amount / totals[name], DIGITS)
            for name, amount in sorted(amounts.items())
            if totals[name] > 0
        }
        for queue, amounts in sorted(used.items())
    }


def _utilisation(
    used: Mapping[str, Mapping[str, float]], capacity: Mapping[str, float]
) -> dict[str, float]:
    out: dict[str, float] = {}
    for name in sorted(capacity):
        if name == "pods" or capacity[name] <= 0:
            continue
        held = sum(amounts.get(name, 0.0) for amounts in used.values())
        out[name] = round(held / capacity[name], DIGITS)
    return out


def summarise(
    usages: Sequence[Usage],
    capacity: Sequence[CapacityStep],
    *,
    makespan: float | None,
    end: float,
    unfinished: Sequence[str],
) -> dict[str, object]:
    """The ``summary`` of a run that stopped ``end`` seconds after its start.

    Args:
        usages: every pod that ran, with the interval it ran.
        capacity: the cluster's capacity over time, in time order.
        makespan: when the last job finished, None when none did.
        end: when the run stopped.
        unfinished: keys of the jobs not in a final phase.

    Returns:
        ``makespan``, ``queues`` (per queue ``resourceSeconds`` and ``share`` of what the
        queues used, per resource), ``utilisation`` (per resource, over the makespan, or
        the whole run when no job finished), ``windows`` and ``unfinished``.
    """
    horizon = makespan if makespan is not None else end
    used = _resource_seconds(usages, 0.0, end)
    shares = _shares(used)
    queues = {
        queue: {
            "resourceSeconds": {n: round(a, DIGITS) for n, a in sorted(amounts.items())},
            "share": shares.get(queue, {}),
        }
        for queue, amounts in sorted(used.items())
    }
    bounds = _window_bounds(end)
    windows = [
        {
            "from": round(lo, 6),
            "to": round(hi, 6),
            "shares": _shares(window_used),
            "utilisation": _utilisation(window_used, _capacity_seconds(capacity, lo, hi)),
        }
        for (lo, hi), window_used in zip(
            bounds, _windowed_resource_seconds(usages, bounds), strict=True
        )
    ]
    return {
        "makespan": round(makespan, 6) if makespan is not None else None,
        "queues": queues,
        "unfinished": sorted(unfinished),
        "utilisation": _utilisation(
            _resource_seconds(usages, 0.0, horizon), _capacity_seconds(capacity, 0.0, horizon)
        ),
        "windows": windows,
    }

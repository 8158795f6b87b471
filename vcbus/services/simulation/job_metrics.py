"""The batch-scheduling figures of a run: waits and bounded slowdown, overall and by job size.

Bounded slowdown is Feitelson's (Feitelson, Rudolph, Schwiegelshohn, Sevcik and Wong,
"Theory and Practice in Parallel Job Scheduling", JSSPP 1997): ``max(1, (wait + run) /
max(run, threshold))`` with a 10 s threshold, so that a very short job's wait does not
dominate the average. A job's wait runs from its submission to its minimum of pods running
(its phase Running), its run from then to its final phase. Percentiles are nearest-rank.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

SLOWDOWN_THRESHOLD = 10.0
"""Seconds below which a job's run time counts as this much in its bounded slowdown."""
SIZE_CLASSES: tuple[tuple[int, int | None], ...] = (
    (1, 1),
    (2, 4),
    (5, 16),
    (17, 64),
    (65, 256),
    (257, None),
)
"""Job size classes by pods, inclusive bounds (None: no upper bound)."""
DIGITS = 4


@dataclass(frozen=True, slots=True)
class JobRun:
    """One job that ran to a final phase: its pods, and when it was submitted, ran, ended."""

    pods: int
    submitted: float
    running: float
    finished: float

    @property
    def wait(self) -> float:
        """Seconds from its submission to its start."""
        return max(0.0, self.running - self.submitted)

    @property
    def run(self) -> float:
        """Seconds from its start to its end."""
        return max(0.0, self.finished - self.running)

    @property
    def bounded_slowdown(self) -> float:
        """``max(1, (wait + run) / max(run, SLOWDOWN_THRESHOLD))``."""
        return max(1.0, (self.wait + self.run) / max(self.run, SLOWDOWN_THRESHOLD))


def percentile(values: Sequence[float], p: float) -> float:
    """The nearest-rank ``p``-th percentile (0 < p ≤ 100) of non-empty ``values``."""
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


def spread(values: Sequence[float]) -> dict[str, float]:
    """``avg``, ``p50``, ``p95`` and ``max`` of non-empty ``values``, rounded."""
    return {
        "avg": round(sum(values) / len(values), DIGITS),
        "p50": round(percentile(values, 50), DIGITS),
        "p95": round(percentile(values, 95), DIGITS),
        "max": round(max(values), DIGITS),
    }


def size_class(pods: int) -> str:
    """The name of the size class of a job of ``pods`` pods (``"2-4"``, ``"257+"``)."""
    for low, high in SIZE_CLASSES:
        if pods >= low and (high is None or pods <= high):
            if high is None:
                return f"{low}+"
            return str(low) if low == high else f"{low}-{high}"
    return "0"


def job_metrics(runs: Sequence[JobRun]) -> dict[str, object]:
    """The figures of the jobs that ran to a final phase.

    Returns:
        ``finishedJobs`` (how many), and when there is one: ``boundedSlowdown`` and ``wait``
        (``avg``, ``p50``, ``p95``, ``max``), and ``waitBySize``: per size class present,
        in size order, its ``jobs`` and the spread of their waits.
    """
    if not runs:
        return {"finishedJobs": 0}
    by_size: dict[str, list[float]] = {}
    for run in sorted(runs, key=lambda r: r.pods):
        by_size.setdefault(size_class(run.pods), []).append(run.wait)
    return {
        "finishedJobs": len(runs),
        "boundedSlowdown": spread([run.bounded_slowdown for run in runs]),
        "wait": spread([run.wait for run in runs]),
        "waitBySize": {
            name: {"jobs": len(waits), **spread(waits)} for name, waits in by_size.items()
        },
    }

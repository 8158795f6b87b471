"""Small statistics for the benchmark's figures."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile (0-100) by the nearest-rank method; None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def summary_ms(seconds: Sequence[float]) -> dict[str, float | int | None]:
    """Count, p50, p99 and max of durations given in seconds, in milliseconds."""

    def ms(value: float | None) -> float | None:
        return None if value is None else round(value * 1000, 2)

    return {
        "count": len(seconds),
        "p50_ms": ms(percentile(seconds, 50)),
        "p99_ms": ms(percentile(seconds, 99)),
        "max_ms": ms(max(seconds)) if seconds else None,
    }


def per_pod(
    cpu_s: Mapping[str, float], events: int, pods: int, services: Sequence[str]
) -> dict[str, object]:
    """CPU per pod of each of ``services`` and the ceiling it implies, and records per pod.

    A service's CPU sums its replicas (labels ``name`` and ``name#instance``). Its ceiling
    is the pods per second it could follow with a core to itself: 1 / CPU per pod.

    Args:
        cpu_s: CPU seconds of each process in the burst, by label.
        events: records written on all topics in the burst.
        pods: pods of the burst.
        services: the services to report (the singletons).
    """
    figures: dict[str, object] = {}
    for name in services:
        seconds = sum(v for label, v in cpu_s.items() if label.split("#")[0] == name)
        ms = seconds * 1000 / pods if pods else None
        figures[name] = {
            "cpu_ms_per_pod": None if ms is None else round(ms, 4),
            "ceiling_pods_per_s": round(1000 / ms) if ms else None,
        }
    figures["records_per_pod"] = round(events / pods, 2) if pods else None
    return figures

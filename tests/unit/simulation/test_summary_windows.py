"""The summary's windows: each window's resource-seconds, from one pass over the pods."""

from __future__ import annotations

from vcbus.services.simulation.summary import (
    MAX_WINDOWS,
    WINDOW_SECONDS,
    CapacityStep,
    Usage,
    _resource_seconds,
    _window_bounds,
    _windowed_resource_seconds,
    summarise,
)

LENGTHS = (0.0, 0.37, 5.5, 59.99, 60.0, 61.3, 3_000.123, 40_000.0)


def _usages(count: int) -> list[Usage]:
    """Pods of two queues at odd moments: within a window, across many, past the last."""
    span = MAX_WINDOWS * WINDOW_SECONDS * 1.2
    usages: list[Usage] = []
    for index in range(count):
        start = (index * 7919.0137) % span
        usages.append(
            Usage(
                queue="ab"[index * 31 % 7 % 2],
                requests={"cpu": (100, 1000, 2500)[index % 3], "memory": 2**30, "pods": 1},
                start=start,
                end=start + LENGTHS[index * 13 % len(LENGTHS)],
            )
        )
    return usages


def test_each_window_has_the_sums_of_a_pass_per_window_to_the_last_digit():
    usages = _usages(3_000)
    bounds = _window_bounds(max(u.end for u in usages) + 0.25)
    assert len(bounds) == MAX_WINDOWS
    windowed = _windowed_resource_seconds(usages, bounds)
    for (lo, hi), used in zip(bounds, windowed, strict=True):
        expected = _resource_seconds(usages, lo, hi)
        assert used == expected  # the same floats, added in the same order
        assert list(used) == list(expected)  # queues in the same order (utilisation sums)


def test_a_short_run_has_one_window_per_minute_and_a_last_part():
    usages = [Usage("a", {"cpu": 1000}, 30.0, 150.0)]
    capacity = [CapacityStep(0.0, {"cpu": 2000})]
    summary = summarise(usages, capacity, makespan=150.0, end=150.0, unfinished=[])
    windows: list[dict[str, object]] = summary["windows"]  # type: ignore[assignment]
    assert [(w["from"], w["to"], w["utilisation"]) for w in windows] == [
        (0.0, 60.0, {"cpu": 0.25}),
        (60.0, 120.0, {"cpu": 0.5}),
        (120.0, 150.0, {"cpu": 0.5}),
    ]

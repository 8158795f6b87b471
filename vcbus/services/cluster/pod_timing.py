"""A simulated pod's timing, read from its annotations: start delay, run time, exit code, grace.

``vcbus.io/start-seconds``, ``vcbus.io/run-seconds`` and ``vcbus.io/exit-code`` (the cluster
core's defaults otherwise) and the template's ``terminationGracePeriodSeconds``, each
bounded so that a due time never overflows.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from vcbus.contracts.objects.pod import (
    ANNOTATION_EXIT_CODE,
    ANNOTATION_RUN_SECONDS,
    ANNOTATION_START_SECONDS,
    DEFAULT_GRACE_SECONDS,
)
from vcbus.core.step import Ctx


@dataclass(frozen=True, slots=True)
class RunSettings:
    """When a simulated pod starts, how long it runs and how it ends (its annotations)."""

    start_delay: float
    run_seconds: float | None
    exit_code: int
    invalid: str


def run_settings(
    annotations: Mapping[str, str],
    ctx: Ctx,
    start_delay_seconds: float,
    start_jitter_seconds: float,
) -> RunSettings:
    """Read a pod's simulation annotations; jitter only the default start delay.

    ``invalid`` says what is wrong with the annotations (empty when nothing is).
    """
    problems: list[str] = []
    start_delay = start_delay_seconds
    if start_jitter_seconds > 0 and ctx.rng is not None:
        start_delay += ctx.rng.uniform(0.0, start_jitter_seconds)
    start_text = annotations.get(ANNOTATION_START_SECONDS)
    if start_text is not None:
        parsed = _seconds(start_text)
        if parsed is None:
            problems.append(_not_seconds(ANNOTATION_START_SECONDS, start_text))
        else:
            start_delay = parsed
    run_seconds = None
    run_text = annotations.get(ANNOTATION_RUN_SECONDS)
    if run_text is not None:
        run_seconds = _seconds(run_text)
        if run_seconds is None:
            problems.append(_not_seconds(ANNOTATION_RUN_SECONDS, run_text))
    exit_code = 0
    exit_text = annotations.get(ANNOTATION_EXIT_CODE)
    if exit_text is not None:
        try:
            exit_code = int(exit_text.strip())
        except ValueError:
            problems.append(f"annotation {ANNOTATION_EXIT_CODE}={exit_text!r} is not an integer")
    return RunSettings(start_delay, run_seconds, exit_code, "; ".join(problems))


MAX_SECONDS = 1e9
"""The longest start delay or run time an annotation may give (about 31 years): a longer
one would overflow the pod's due time (it failed the node's timer and the cluster with it)."""


def _seconds(text: str) -> float | None:
    try:
        value = float(text.strip())
    except ValueError:
        return None
    return value if math.isfinite(value) and 0 <= value <= MAX_SECONDS else None


def _not_seconds(annotation: str, text: str) -> str:
    return f"annotation {annotation}={text!r} is not a number of seconds from 0 to {MAX_SECONDS:g}"


def grace(seconds: int | None) -> float:
    """A pod's grace period in seconds: its template's, else Kubernetes' 30 s (bounded)."""
    if seconds is None or seconds < 0:
        return float(DEFAULT_GRACE_SECONDS)
    return float(min(seconds, MAX_SECONDS))

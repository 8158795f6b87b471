"""The format of ``vcbus simulate --json`` in full mode, as types, and its JSON Schema.

:meth:`vcbus.services.simulation.outcome.Outcome.report` builds plain data; these Structs say what
it holds, field by field (``docs/simulate.md`` describes each), and
``docs/simulate-output.schema.json`` is rendered from them (``python -m
vcbus.services.simulation.outcome_format`` writes it; a test keeps it current and checks real
outputs against the types). Times are seconds from the start of the run; resource amounts
in ``summary`` are whole units (cores, devices, bytes).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import msgspec

SCHEMA_PATH = Path(__file__).resolve().parents[3] / "docs" / "simulate-output.schema.json"


class _Format(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    pass


class TaskCounts(_Format, frozen=True):
    """Pods of one task by phase."""

    pending: int
    running: int
    succeeded: int
    failed: int
    unknown: int


class JobTimes(_Format, frozen=True, rename="camel", omit_defaults=True):
    """When a job reached each step, first time; a step not reached is absent."""

    submitted: float | None = None
    admitted: float | None = None
    inqueue: float | None = None
    first_bound: float | None = None
    running: float | None = None
    """Its minimum of pods running (job phase Running)."""
    finished: float | None = None
    """A final phase (Completed, Failed, Aborted, Terminated) or deleted."""


class JobReport(_Format, frozen=True):
    """One admitted job at the end of the run."""

    phase: str
    podgroup: str
    queue: str
    priority: int | None
    reason: str
    message: str
    tasks: dict[str, TaskCounts]
    times: JobTimes


class PodReport(_Format, frozen=True, rename={"exit_code": "exitCode"}):
    """One pod at the end of the run."""

    task: str
    node: str | None
    phase: str
    exit_code: int | None
    deleted: bool
    requests: dict[str, str]
    """Kubernetes quantities."""
    bound: float | None
    running: float | None
    finished: float | None


class Violation(_Format, frozen=True):
    """Why admission rejected a job."""

    path: str
    reason: str
    message: str


class DeadLetter(_Format, frozen=True):
    """Records one service sent to the dead-letter topic of ``topic``."""

    topic: str
    service: str
    count: int


class QueueUse(_Format, frozen=True, rename="camel"):
    """What a queue's pods held over the run, per resource."""

    resource_seconds: dict[str, float]
    share: dict[str, float]
    """Its part of what all queues held (0 to 1)."""


class Window(_Format, frozen=True, rename={"start": "from", "end": "to"}):
    """One minute of the run (the last one may be shorter)."""

    start: float
    end: float
    shares: dict[str, dict[str, float]]
    """Queue → resource → its part of what the queues held in the window."""
    utilisation: dict[str, float]
    """Resource → what was held over the capacity of the window."""


class Spread(_Format, frozen=True):
    """The average, nearest-rank median and 95th percentile, and maximum of some figures."""

    avg: float
    p50: float
    p95: float
    max: float


class SizeWaits(_Format, frozen=True):
    """The waits of the jobs of one size class (by pods)."""

    jobs: int
    avg: float
    p50: float
    p95: float
    max: float


class Summary(_Format, frozen=True, rename="camel"):
    """Figures to judge the schedule by (the jobs': ``vcbus.services.simulation.job_metrics``)."""

    makespan: float | None
    """When the last job finished; null when none did."""
    queues: dict[str, QueueUse]
    utilisation: dict[str, float]
    """Resource → held over capacity, from the start to the makespan."""
    windows: list[Window]
    unfinished: list[str]
    """Jobs in no final phase when the run stopped."""
    finished_jobs: int
    """Jobs that ran to a final phase: the ones the figures below are of."""
    bounded_slowdown: Spread | None = None
    """``max(1, (wait + run) / max(run, 10 s))`` per job."""
    wait: Spread | None = None
    """Seconds from a job's submission to its minimum of pods running."""
    wait_by_size: dict[str, SizeWaits] | None = None
    """Size class by pods (``1``, ``2-4``, ``5-16``, ``17-64``, ``65-256``, ``257+``) →
    its jobs' waits, in size order."""


class EnqueuePick(_Format, frozen=True):
    """One job enqueue tried: the queue's share when picked, and the verdict."""

    queue: str
    share: float | None
    job: str
    admitted: bool
    reason: str
    """Why it stays Pending (a docs/design.md#pending-reasons code); empty when admitted."""


class PhaseChange(_Format, frozen=True):
    """A PodGroup phase or reason change the cycle publishes."""

    job: str
    phase: str
    reason: str


class Bound(_Format, frozen=True):
    """Pods of one job the cycle bound, and their nodes."""

    job: str
    pods: int
    nodes: list[str]


class Skipped(_Format, frozen=True):
    """A job the allocator could not (fully) place this cycle, and why."""

    job: str
    reason: str
    message: str


class Cycle(_Format, frozen=True, omit_defaults=True):
    """What one scheduling cycle decided (``--cycles``); lists hold at most 100 items."""

    t: float
    service: str
    enqueue: list[EnqueuePick] = []
    phases: list[PhaseChange] = []
    bound: list[Bound] = []
    skipped: list[Skipped] = []
    more: dict[str, int] = {}
    """List name → items left out of it."""


class FullOutcome(_Format, frozen=True, rename="camel", omit_defaults=True):
    """The outcome of a full-mode scenario."""

    jobs: dict[str, JobReport]
    pods: dict[str, PodReport]
    rejected: dict[str, list[Violation]]
    dead_letters: list[DeadLetter]
    target_job: str | None
    locked_nodes: list[str]
    timeline: list[dict[str, Any]]
    """Notable events in order, each ``{t, event, ...}``."""
    stopped_by: Literal["settled", "stalled", "until", "limit"]
    summary: Summary
    cycles: list[Cycle] | None = None
    """With ``--cycles``: the cycles that decided anything, in order, at most 2000."""
    cycles_left_out: int | None = None
    """With ``--cycles``: cycles after the first 2000."""


def render_schema() -> str:
    """The JSON Schema of :class:`FullOutcome`, as the file holds it."""
    return json.dumps(msgspec.json.schema(FullOutcome), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":
    SCHEMA_PATH.write_text(render_schema())
    print(f"wrote {SCHEMA_PATH}")

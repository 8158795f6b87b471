"""``python -m tests.bench.quality`` (``make quality``): scheduling quality, feature on and off.

Each case runs one scenario of ``examples/scenarios`` through every service on the
in-memory bus and virtual clock (``vcbus simulate``), once per variant of the scheduler
configuration, and prints from each outcome:

- makespan: when the last job finished (seconds from the start);
- occupancy: the watched resource's pod-seconds over (cluster capacity x makespan);
- elections: how many reservation targets were elected;
- evictions: how many pods preempt and reclaim evicted;
- watched job or pod: when it (its first pod) ran;
- per-round starts: for jobs named ``r<round>-...``, when each round's first and last job
  started (a round is a set of jobs meant to run together).

Nothing is timed on the machine: the figures come from the simulated timeline, so every
run prints the same numbers (the trace cases' ``wall s`` column aside).

Trace cases (``tests.bench.traces``) follow: 1,024-job slices of the SWF traces in
``examples/traces`` through vcbus (default configuration; reservation off; backfill off)
and through reference FCFS, greedy and EASY schedulers (``tests.bench.reference``), with
bounded slowdown, waits and utilisation side by side. ``--case lublin`` runs only those;
``--variant "reservation off"`` only that vcbus variant (the default configuration's
reservation steps take the longest). To add a case, append a ``Case`` to ``CASES``; to compare
another feature, give its variants (a name and the configuration keys they set).
``--case NAME`` runs the cases whose scenario name contains NAME; ``--json`` prints the
figures as JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.bench.traces import TRACE_CASES, TRACE_VARIANTS, render_trace_case, run_trace_case
from vcbus.core.logging.setup import configure_logging
from vcbus.core.runtime.collector import tune_collector
from vcbus.services.simulation.run import simulate_in_memory
from vcbus.services.simulation.scenario import DEFAULT_ACTIONS, load_document, parse_scenario

SCENARIOS = Path(__file__).resolve().parents[2] / "examples" / "scenarios"


@dataclass(frozen=True)
class Variant:
    """One configuration to compare: its name and the ``config`` keys it sets."""

    name: str
    config: Mapping[str, object]


RESERVATION = (
    Variant("reservation on", {"actions": DEFAULT_ACTIONS}),
    Variant("reservation off", {"actions": "enqueue, allocate, backfill"}),
)
"""docs/design.md#reservation: the reservation actions (elect, reserve) with their defaults, and
none."""

PREEMPTION = (
    Variant("preempt on", {"actions": "enqueue, allocate, preempt, backfill"}),
    Variant("preempt off", {"actions": "enqueue, allocate, backfill"}),
)
"""The preempt action, and none."""

RECLAIM = (
    Variant("reclaim on", {"actions": "enqueue, allocate, reclaim, backfill"}),
    Variant("reclaim off", {"actions": "enqueue, allocate, backfill"}),
)
"""The reclaim action, and none."""


@dataclass(frozen=True)
class Case:
    """A scenario, the resource its occupancy counts, and the variants to compare."""

    scenario: str
    resource: str = "cpu"
    variants: tuple[Variant, ...] = RESERVATION
    watch: str | None = None
    """A job (its first pod) or a pod whose start is reported (``namespace/name``)."""
    ideal: float | None = None
    """The makespan of a perfect scheduler, when known."""
    shares: bool = False
    """Report each queue's share of ``resource`` per minute (docs/design.md#queue-shares)."""


CASES: list[Case] = [
    Case("knavigator-gang-burst.yaml", resource="nvidia.com/gpu", ideal=270.0),
    Case("knavigator-burst.yaml", resource="nvidia.com/gpu", ideal=270.0),
    Case("starving-big-job.yaml", watch="default/big"),
    Case("reservation-infeasible.yaml", watch="default/small-2"),
    Case("reservation-will-bind.yaml", watch="default/mpi-master-0"),
    Case("weighted-queues.yaml", shares=True),
    Case("preempt-high-priority.yaml", variants=PREEMPTION, watch="default/high"),
    Case("preempt-gang-all-or-nothing.yaml", variants=PREEMPTION, watch="default/high-b"),
    Case("reclaim-light-queue.yaml", variants=RECLAIM, watch="default/light-3", shares=True),
]


@dataclass
class Figures:
    """What one run of one variant gave."""

    case: str
    variant: str
    makespan: float | None
    occupancy: float | None
    elections: int
    unfinished: list[str]
    watched_start: float | None = None
    rounds: dict[str, tuple[float, float]] = field(default_factory=dict)
    shares: dict[str, tuple[float, float]] = field(default_factory=dict)
    """Queue → its lowest and highest share per minute after the first."""
    pod_starts: dict[str, float] = field(default_factory=dict)
    """Pod key → when it first ran."""
    reasons: dict[str, str | None] = field(default_factory=dict)
    """Job key → the reason of its PodGroup at the end (unfinished jobs only)."""
    evictions: int = 0
    """Pods evicted by preempt and reclaim."""


def run_case(case: Case, variant: Variant) -> Figures:
    """Simulate ``case``'s scenario under ``variant`` and compute its figures."""
    path = SCENARIOS / case.scenario
    document = dict(load_document(path.read_text()))
    config = document.get("config")
    document["config"] = {**(config if isinstance(config, Mapping) else {}), **variant.config}
    scenario = parse_scenario(document, path.parent)
    outcome = asyncio.run(simulate_in_memory(scenario))
    return figures(case, variant, outcome)


def _job_of(pod: str, task: str) -> str:
    """The job key of a pod key ``ns/<job>-<task>-<index>``."""
    return re.sub(rf"-{re.escape(task)}-\d+$", "", pod)


def figures(case: Case, variant: Variant, outcome: Mapping[str, Any]) -> Figures:
    """The figures of one outcome (``vcbus simulate --json``), read from its summary."""
    summary: dict[str, Any] = outcome["summary"]
    pods: dict[str, dict[str, Any]] = outcome["pods"]
    starts = {
        pod: float(entry["running"])
        for pod, entry in pods.items()
        if entry.get("running") is not None
    }
    job_starts: dict[str, float] = {}
    for pod, start in starts.items():
        job = _job_of(pod, str(pods[pod].get("task", "")))
        job_starts[job] = min(start, job_starts.get(job, start))
    rounds: dict[str, list[float]] = defaultdict(list)
    for job, start in job_starts.items():
        found = re.match(r"^[^/]+/(r\d+)-", job)
        if found:
            rounds[found.group(1)].append(start)
    jobs: dict[str, dict[str, Any]] = outcome["jobs"]
    unfinished = sorted(
        key for key, job in jobs.items() if job.get("phase") not in ("Completed", "Failed")
    )
    makespan = summary.get("makespan")
    return Figures(
        case=case.scenario,
        variant=variant.name,
        makespan=float(makespan) if makespan is not None else None,
        occupancy=summary.get("utilisation", {}).get(case.resource),
        elections=sum(1 for e in outcome["timeline"] if e.get("event") == "elected"),
        unfinished=unfinished,
        watched_start=job_starts.get(case.watch, starts.get(case.watch)) if case.watch else None,
        rounds={
            name: (min(ts), max(ts))
            for name, ts in sorted(rounds.items(), key=lambda kv: int(kv[0][1:]))
        },
        shares=_minute_shares(summary, case.resource) if case.shares else {},
        pod_starts=dict(sorted(starts.items())),
        reasons={key: jobs[key].get("reason") for key in unfinished},
        evictions=sum(1 for e in outcome["timeline"] if e.get("event") == "evict"),
    )


def _minute_shares(summary: Mapping[str, Any], resource: str) -> dict[str, tuple[float, float]]:
    """Queue → the lowest and highest share of ``resource`` over the full minutes after the
    first (docs/design.md#queue-shares judges shares there: the first minute fills the cluster)."""
    windows = [
        w for w in summary.get("windows", ()) if w["from"] >= 60 and w["to"] - w["from"] >= 60
    ]
    found: dict[str, list[float]] = defaultdict(list)
    for window in windows:
        for queue, shares in window["shares"].items():
            found[queue].append(float(shares.get(resource, 0.0)))
    return {queue: (min(values), max(values)) for queue, values in sorted(found.items())}


def _num(value: float | None, unit: str = "s") -> str:
    return "-" if value is None else f"{value:.1f}{unit}"


def render(case: Case, results: Sequence[Figures]) -> str:
    """One case's figures as a small table."""
    lines = [
        f"{case.scenario}" + (f" (a perfect scheduler: {case.ideal:g}s)" if case.ideal else "")
    ]
    head = f"  {'variant':<16} {'makespan':>9} {'occupancy':>9} {'elected':>7}"
    if case.watch:
        head += f"  {case.watch + ' starts':>24}"
    lines.append(head + "  unfinished")
    for r in results:
        occupancy = "-" if r.occupancy is None else f"{100 * r.occupancy:.1f}%"
        row = f"  {r.variant:<16} {_num(r.makespan):>9} {occupancy:>9} {r.elections:>7}"
        if case.watch:
            row += f"  {_num(r.watched_start):>24}"
        lines.append(row + f"  {', '.join(r.unfinished) or '-'}")
    for r in results:
        if r.evictions:
            lines.append(f"  pods evicted, {r.variant}: {r.evictions}")
    for r in results:
        if r.rounds:
            starts = "  ".join(f"{k} {a:.0f}-{b:.0f}" for k, (a, b) in r.rounds.items())
            lines.append(f"  round starts, {r.variant}: {starts}")
    for r in results:
        if r.shares:
            shares = "  ".join(
                f"{queue} {100 * low:.0f}-{100 * high:.0f}%"
                for queue, (low, high) in r.shares.items()
            )
            lines.append(f"  shares per minute after the first, {r.variant}: {shares}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the cases (all, or those ``--case`` names) and print their figures."""
    parser = argparse.ArgumentParser(prog="python -m tests.bench.quality", description=__doc__)
    parser.add_argument("--case", default="", help="run the cases whose scenario contains this")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument(
        "--variant", default="", help="trace cases: run the vcbus variants whose name has this"
    )
    args = parser.parse_args(argv)
    tune_collector()  # as vcbus simulate does
    configure_logging("quality", level="error")
    everything: list[dict[str, object]] = []
    for case in CASES:
        if args.case not in case.scenario:
            continue
        results = [run_case(case, variant) for variant in case.variants]
        if args.json:
            everything.extend(
                {k: v for k, v in r.__dict__.items() if k != "pod_starts"} for r in results
            )
        else:
            sys.stdout.write(render(case, results) + "\n\n")
            sys.stdout.flush()
    variants = [v for v in TRACE_VARIANTS if args.variant in v.name]
    for trace_case in TRACE_CASES:
        if args.case not in trace_case.name:
            continue
        rows = run_trace_case(trace_case, variants)
        if args.json:
            everything.extend(rows)
        else:
            sys.stdout.write(render_trace_case(rows) + "\n\n")
            sys.stdout.flush()
    if args.json:
        sys.stdout.write(json.dumps(everything, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

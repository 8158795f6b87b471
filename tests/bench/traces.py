"""The trace cases of ``make quality``: slices of public SWF traces through vcbus and the
reference policies (``tests.bench.reference``), side by side.

Each case takes ``count`` jobs of a trace of ``examples/traces`` from the ``start``-th, on
the machine its header gives (one 1-cpu node per processor), each job a gang with its run
time and its time limit (``--walltime run``: Lublin's model gives no requested times), as
``vcbus simulate TRACE.swf`` builds it. vcbus runs it in the variants below; FCFS, greedy
first fit and EASY backfill run the same jobs in a small event simulator. Figures: average,
p95 and maximum bounded slowdown (10 s threshold), average, p95 and maximum wait, and
utilisation, all from the simulated timelines.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.bench.reference import POLICIES, simulate
from vcbus.core.scheduling.framework.conf import DEFAULT_SCENARIO_TIERS
from vcbus.core.scheduling.plugins.aging import NAME as AGING
from vcbus.core.scheduling.plugins.aging import OLDEST_PLAN
from vcbus.services.simulation.run import simulate_in_memory
from vcbus.services.simulation.scenario import parse_scenario
from vcbus.services.simulation.swf import Shape, read_trace, trace_document

TRACES = Path(__file__).resolve().parents[2] / "examples" / "traces"


@dataclass(frozen=True)
class TraceVariant:
    """A vcbus configuration for a trace: its ``config`` and where time limits come from."""

    name: str
    config: Mapping[str, object] | None
    walltime: str


WITHOUT_AGING: Mapping[str, object] = {
    "tiers": [
        {"plugins": [p for p in tier["plugins"] if p["name"] != AGING]}
        for tier in yaml.safe_load(DEFAULT_SCENARIO_TIERS)["tiers"]
    ]
}
"""The default configuration without the ``aging`` queue order (priority, then age)."""

WITH_OLDEST_PLAN: Mapping[str, object] = {
    "tiers": [
        {
            "plugins": [
                {**p, "arguments": {OLDEST_PLAN: True}} if p["name"] == AGING else p
                for p in tier["plugins"]
            ]
        }
        for tier in yaml.safe_load(DEFAULT_SCENARIO_TIERS)["tiers"]
    ]
}
"""The default configuration with ``aging-oldest-plan``: the oldest job's planned start kept
besides the aging head's."""

TRACE_VARIANTS = (
    TraceVariant("vcbus default", None, "run"),
    TraceVariant("vcbus, aging off", WITHOUT_AGING, "run"),
    TraceVariant("vcbus, oldest plan", WITH_OLDEST_PLAN, "run"),
    TraceVariant("vcbus, reservation off", {"actions": "enqueue, allocate, backfill"}, "run"),
    TraceVariant("vcbus, backfill off", {"actions": "enqueue, allocate, backfill"}, "request"),
)
"""The default configuration (reservation on, the ``aging`` queue order) with time limits;
the same without ``aging`` (the default before it); with ``aging-oldest-plan``; reservation
off (planned starts and backfill on); and neither (no time limits: no plans, as before
docs/design.md#planned-start)."""


@dataclass(frozen=True)
class TraceCase:
    """``count`` jobs of ``trace`` from the ``start``-th."""

    trace: str
    start: int
    count: int

    @property
    def name(self) -> str:
        """``<trace> <first>-<last>``."""
        return f"{self.trace} {self.start}-{self.start + self.count - 1}"


TRACE_CASES = (
    TraceCase("lublin_256.swf", 0, 1024),
    TraceCase("lublin_256.swf", 1024, 1024),
    TraceCase("lublin_256.swf", 2048, 1024),
    TraceCase("lublin_256.swf", 4096, 1024),
    TraceCase("lublin_256.swf", 6144, 1024),
    TraceCase("lublin_256.swf", 8192, 1024),
    TraceCase("lublin-aaroh.swf", 0, 1024),
    TraceCase("lublin-aaroh.swf", 1024, 1024),
    TraceCase("lublin-aaroh.swf", 2048, 1024),
)


def _keep(figures: Mapping[str, Any]) -> dict[str, object]:
    slowdown = figures.get("boundedSlowdown") or {}
    wait = figures.get("wait") or {}
    return {
        "bsld avg": slowdown.get("avg"),
        "bsld p95": slowdown.get("p95"),
        "bsld max": slowdown.get("max"),
        "wait avg": wait.get("avg"),
        "wait p95": wait.get("p95"),
        "wait max": wait.get("max"),
        "utilisation": figures.get("utilisation"),
        "finished": figures.get("finishedJobs"),
    }


def run_trace_case(case: TraceCase, variants: Sequence[TraceVariant]) -> list[dict[str, object]]:
    """The figures of every variant and reference policy on ``case``, one row each."""
    trace = read_trace((TRACES / case.trace).read_text().splitlines())
    processors = trace.processors or 1
    rows: list[dict[str, object]] = []
    for variant in variants:
        document = trace_document(
            trace,
            Shape(nodes=processors),
            start=case.start,
            count=case.count,
            walltime=variant.walltime,
        )
        if variant.config is not None:
            document["config"] = dict(variant.config)
        started = time.perf_counter()
        outcome = asyncio.run(simulate_in_memory(parse_scenario(document)))
        wall = time.perf_counter() - started
        summary: dict[str, Any] = outcome["summary"]  # type: ignore[assignment]
        rows.append(
            {
                "case": case.name,
                "policy": variant.name,
                **_keep({**summary, "utilisation": summary["utilisation"].get("cpu")}),
                "wall s": round(wall, 1),
            }
        )
    kept = [job for job in trace.jobs if job.processors <= processors]
    jobs = kept[case.start : case.start + case.count]
    for policy in POLICIES:
        rows.append(
            {"case": case.name, "policy": policy, **_keep(simulate(jobs, processors, policy))}
        )
    return rows


def _cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.2f}" if value < 100 else f"{value:,.0f}"
    return str(value)


def render_trace_case(rows: Sequence[Mapping[str, object]]) -> str:
    """One case's rows as a small table."""
    columns = [k for k in rows[0] if k != "case"]
    widths = {c: max(len(c), *(len(_cell(r.get(c))) for r in rows)) for c in columns}
    lines = [str(rows[0]["case"])]
    lines.append("  " + "  ".join(c.ljust(widths[c]) for c in columns))
    for row in rows:
        lines.append("  " + "  ".join(_cell(row.get(c)).ljust(widths[c]) for c in columns))
    return "\n".join(lines)

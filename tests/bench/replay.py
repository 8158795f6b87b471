"""Trace replay speed: wall and CPU time of ``vcbus simulate`` on slices of an SWF trace.

``python -m tests.bench.replay`` replays the first 1,024 and all 10,000 jobs of
``examples/traces/lublin_256.swf`` (256 one-cpu nodes) in memory on the virtual clock, as
``vcbus simulate TRACE.swf --count N`` does, and prints per slice the jobs, the virtual
days, the pods, the wall and CPU seconds and the jobs finished. ``--count`` picks other
slices. Each job has its run time as its time limit (``--walltime run``, as the trace
cases of ``make quality`` and RLScheduler do: Lublin's model gives no requested times);
``--walltime request`` replays it without limits, ``--no-aging`` in the default
configuration less its ``aging`` queue order (first come, first served among equals, as
before it). Figures: docs/performance.md ("Trace replay speed").
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.bench.traces import WITHOUT_AGING
from vcbus.core.logging.setup import configure_logging
from vcbus.core.runtime.collector import tune_collector
from vcbus.services.simulation.run import simulate_in_memory
from vcbus.services.simulation.scenario import parse_scenario
from vcbus.services.simulation.swf import Shape, read_trace, trace_document

TRACES = Path(__file__).resolve().parents[2] / "examples" / "traces"
COUNTS = (1024, 10_000)


def replay(trace_name: str, count: int, walltime: str, *, aging: bool = True) -> dict[str, object]:
    """Replay the first ``count`` jobs of ``trace_name``; its figures and times."""
    trace = read_trace((TRACES / trace_name).read_text().splitlines())
    document = trace_document(
        trace, Shape(nodes=trace.processors or 1), start=0, count=count, walltime=walltime
    )
    if not aging:
        document["config"] = dict(WITHOUT_AGING)
    scenario = parse_scenario(document)
    wall, cpu = time.perf_counter(), time.process_time()
    outcome = asyncio.run(simulate_in_memory(scenario))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    summary: dict[str, Any] = outcome["summary"]  # type: ignore[assignment]
    jobs = [job for job in trace.jobs if job.processors <= (trace.processors or 1)][:count]
    return {
        "jobs": len(jobs),
        "pods": sum(job.processors for job in jobs),
        "virtual days": round(float(summary.get("makespan") or 0.0) / 86_400, 1),
        "wall s": round(wall, 1),
        "cpu s": round(cpu, 1),
        "finished": summary.get("finishedJobs"),
        "bsld avg": (summary.get("boundedSlowdown") or {}).get("avg"),
        "wait max": (summary.get("wait") or {}).get("max"),
    }


def main(argv: Sequence[str] | None = None) -> None:
    """Replay each slice and print one line of figures per slice."""
    parser = argparse.ArgumentParser(prog="python -m tests.bench.replay")
    parser.add_argument("--trace", default="lublin_256.swf")
    parser.add_argument("--count", type=int, action="append", help="jobs [1024 and 10000]")
    parser.add_argument("--walltime", choices=("request", "run"), default="run")
    parser.add_argument(
        "--no-aging", action="store_true", help="the default configuration without aging"
    )
    args = parser.parse_args(argv)
    tune_collector()  # as vcbus simulate does
    configure_logging("simulate", level="warning")
    for count in args.count or COUNTS:
        figures = replay(args.trace, count, args.walltime, aging=not args.no_aging)
        line = ", ".join(f"{name} {value}" for name, value in figures.items())
        order = ", aging off" if args.no_aging else ""
        print(f"{args.trace} first {count} (--walltime {args.walltime}{order}): {line}", flush=True)


if __name__ == "__main__":
    main()

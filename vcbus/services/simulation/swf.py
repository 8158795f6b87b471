"""Standard Workload Format traces as ``vcbus simulate`` scenarios (docs/simulate.md).

The Standard Workload Format (SWF) is the Parallel Workloads Archive's: ``;`` header
comments (``MaxNodes``, ``MaxProcs``, ...), then one job a line, 18 whitespace-separated
fields (1 job number, 2 submit time, 3 wait, 4 run time, 5 allocated processors, 6 average
cpu time, 7 used memory, 8 requested processors, 9 requested time, 10 requested memory,
11 status, ...; -1 means unknown). Feitelson's definition:
https://www.cs.huji.ac.il/labs/parallel/workload/swf.html

Each job becomes one gang (:func:`trace_document`): one task of ``processors`` replicas,
``minAvailable`` = replicas, one pod per processor requesting one processor's share of a
node, its run time as ``vcbus.io/run-seconds`` and its requested time as
``activeDeadlineSeconds``, and ``ttlSecondsAfterFinished`` (0 by default: a trace job is
deleted as it finishes). The rules follow RLScheduler's reader (DIR-LAB
deep-batch-scheduler ``job.py``, SC'20): processors = max(allocated, requested); a run time
below 0 counts as 10 s; a job that ran 0 s is left out; with ``walltime="run"`` a job
without a requested time has its run time as its limit.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

WALLTIMES = ("request", "run")
"""Where a job's time limit comes from: its requested time only, or its run time when the
trace gives no request."""
NEGATIVE_RUN_SECONDS = 10
"""The run time of a job whose trace run time is below 0 (RLScheduler's rule)."""
FIELDS = 18
TTL_AFTER_FINISHED = 0
"""Seconds a finished trace job is kept before it is deleted (``ttlSecondsAfterFinished``).
0: the trace says nothing more of a job once it ended, and a job kept forever keeps its
pods on their nodes' state, which grows with the replay's history."""
NEVER = "never"


class TraceError(ValueError):
    """A trace that cannot be read; the message names the line."""


@dataclass(frozen=True, slots=True)
class TraceJob:
    """One job of a trace, as the scenario uses it."""

    number: int
    submit: int
    """Seconds from the trace's start."""
    run: int
    processors: int
    requested: int | None
    """Requested time in seconds; None when the trace gives none."""


@dataclass(frozen=True, slots=True)
class Trace:
    """A trace's header fields and jobs, in file order."""

    header: Mapping[str, str]
    jobs: tuple[TraceJob, ...]

    @property
    def processors(self) -> int | None:
        """The machine's processors (``MaxProcs``, else ``MaxNodes``), if the header says."""
        for name in ("MaxProcs", "MaxNodes"):
            value = self.header.get(name, "")
            if value.isdigit() and int(value) > 0:
                return int(value)
        return None


def read_trace(lines: Iterable[str]) -> Trace:
    """Read an SWF trace.

    Raises:
        TraceError: a line that is not 18 integers (numbered from 1).
    """
    header: dict[str, str] = {}
    jobs: list[TraceJob] = []
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith(";"):
            name, colon, value = line[1:].partition(":")
            if colon:
                header.setdefault(name.strip(), value.strip())
            continue
        fields = line.split()
        try:
            values = [int(float(field)) for field in fields]
        except ValueError:
            raise TraceError(f"line {number}: expected {FIELDS} numbers, got {line!r}") from None
        if len(values) < FIELDS:
            raise TraceError(f"line {number}: expected {FIELDS} fields, got {len(values)}")
        run = values[3] if values[3] >= 0 else NEGATIVE_RUN_SECONDS
        if run == 0:
            continue
        processors = max(values[4], values[7])
        if processors <= 0:
            continue
        requested = values[8] if values[8] > 0 else None
        jobs.append(TraceJob(values[0], values[1], run, processors, requested))
    return Trace(header, tuple(jobs))


def job_limit(job: TraceJob, walltime: str) -> int | None:
    """A job's ``activeDeadlineSeconds`` (None: no limit).

    Its request, never below its run time; without one, per ``walltime``, its run time.
    """
    if job.requested is not None:
        return max(job.requested, job.run)
    return job.run if walltime == "run" else None


@dataclass(frozen=True, slots=True)
class Shape:
    """The cluster a trace runs on: ``nodes`` alike, each holding ``cpu`` processors."""

    nodes: int
    cpu: int = 1
    memory_per_cpu: str = "1Gi"


def trace_document(
    trace: Trace,
    shape: Shape,
    *,
    start: int = 0,
    count: int | None = None,
    walltime: str = "request",
    ttl_after_finished: int | None = TTL_AFTER_FINISHED,
) -> dict[str, object]:
    """A full-mode scenario document holding ``count`` jobs of ``trace`` from ``start``.

    Times are shifted so that the first job of the slice arrives at 0. Jobs wider than the
    cluster are left out (they could never run). Each job is deleted
    ``ttl_after_finished`` seconds after it finished (None: kept).

    Raises:
        TraceError: an unknown ``walltime``, or an empty slice.
    """
    if walltime not in WALLTIMES:
        raise TraceError(f"walltime: expected one of {', '.join(WALLTIMES)}, got {walltime!r}")
    capacity = shape.nodes * shape.cpu
    chosen = [job for job in trace.jobs if job.processors <= capacity]
    chosen = chosen[start : None if count is None else start + count]
    if not chosen:
        raise TraceError("the trace has no job in that slice")
    origin = chosen[0].submit
    nodes = [
        {
            "name": f"n{index:0{len(str(shape.nodes - 1))}d}",
            "allocatable": {
                "cpu": str(shape.cpu),
                "memory": _times(shape.memory_per_cpu, shape.cpu),
                "pods": 110,
            },
        }
        for index in range(shape.nodes)
    ]
    jobs = [
        {"at": job.submit - origin, "job": _manifest(job, shape, walltime, ttl_after_finished)}
        for job in chosen
    ]
    last = max(job.submit - origin for job in chosen)
    longest = max(job_limit(job, "run") or job.run for job in chosen)
    total = sum(job.run for job in chosen)
    return {"nodes": nodes, "jobs": jobs, "limit": last + longest + total + 3600}


def _times(quantity: str, factor: int) -> str:
    digits = quantity.rstrip("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    return f"{int(digits) * factor}{quantity[len(digits) :]}"


def _manifest(
    job: TraceJob, shape: Shape, walltime: str, ttl_after_finished: int | None
) -> dict[str, object]:
    spec: dict[str, object] = {
        "containers": [
            {
                "name": "main",
                "image": "busybox",
                "resources": {"requests": {"cpu": "1", "memory": shape.memory_per_cpu}},
            }
        ]
    }
    limit = job_limit(job, walltime)
    if limit is not None:
        spec["activeDeadlineSeconds"] = limit
    job_spec: dict[str, object] = {
        "minAvailable": job.processors,
        "tasks": [
            {
                "name": "main",
                "replicas": job.processors,
                "template": {
                    "metadata": {"annotations": {"vcbus.io/run-seconds": str(job.run)}},
                    "spec": spec,
                },
            }
        ],
    }
    if ttl_after_finished is not None:
        job_spec["ttlSecondsAfterFinished"] = ttl_after_finished
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": f"job-{job.number}"},
        "spec": job_spec,
    }


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``vcbus simulate TRACE.swf``."""
    group = parser.add_argument_group("SWF traces (a FILE ending .swf, docs/simulate.md)")
    group.add_argument(
        "--nodes", type=int, help="nodes of the cluster [the header's MaxProcs / --node-cpu]"
    )
    group.add_argument("--node-cpu", type=int, default=1, help="processors per node [1]")
    group.add_argument(
        "--memory-per-cpu", default="1Gi", help="memory per processor, a quantity [1Gi]"
    )
    group.add_argument("--start", type=int, default=0, help="first job of the slice [0]")
    group.add_argument("--count", type=int, help="jobs in the slice [all]")
    group.add_argument(
        "--walltime",
        choices=WALLTIMES,
        default="request",
        help="time limit of a job the trace gives no requested time: none (request) or its "
        "run time (run) [request]",
    )
    group.add_argument(
        "--ttl-after-finished",
        type=ttl_seconds,
        default=TTL_AFTER_FINISHED,
        metavar="SECONDS",
        help="seconds a finished job is kept before it is deleted (its "
        f"ttlSecondsAfterFinished), or {NEVER} [{TTL_AFTER_FINISHED}]",
    )


def ttl_seconds(text: str) -> int | None:
    """A ``--ttl-after-finished`` value: whole seconds from 0, or ``never`` (None).

    Raises:
        argparse.ArgumentTypeError: anything else.
    """
    if text.strip().lower() == NEVER:
        return None
    try:
        seconds = int(text)
    except ValueError:
        seconds = -1
    if seconds < 0:
        raise argparse.ArgumentTypeError(f"expected whole seconds from 0 or {NEVER}, got {text!r}")
    return seconds


def is_trace(path: Path) -> bool:
    """Whether ``path`` names an SWF trace rather than a scenario."""
    return path.suffix.lower() == ".swf"


def document_from_args(path: Path, args: argparse.Namespace) -> dict[str, object]:
    """The scenario document of the trace at ``path`` with the options of ``args``.

    Raises:
        TraceError: an unreadable trace, or no cluster size given or known.
        OSError: the file cannot be read.
    """
    with path.open() as lines:
        trace = read_trace(lines)
    nodes = args.nodes
    if nodes is None:
        processors = trace.processors
        if processors is None:
            raise TraceError("the trace's header gives no MaxProcs or MaxNodes: give --nodes")
        nodes = max(1, processors // args.node_cpu)
    shape = Shape(nodes=nodes, cpu=args.node_cpu, memory_per_cpu=args.memory_per_cpu)
    return trace_document(
        trace,
        shape,
        start=args.start,
        count=args.count,
        walltime=args.walltime,
        ttl_after_finished=args.ttl_after_finished,
    )

"""``vcbus simulate --html FILE``: a run's outcome as one self-contained HTML page.

The page holds the dashboard's charts (:mod:`vcbus.core.views.charts`), drawn over the run's
virtual time from its outcome (:meth:`vcbus.services.simulation.outcome.Outcome.report`), and a
Gantt of the jobs:

- cluster utilisation: per resource (cpu, memory), what the Running pods request out of
  what the scenario's nodes offer, averaged over each of :data:`BUCKETS` equal parts of
  the run;
- each queue's share against its deserved share: the queue's dominant share of the
  cluster (the larger of its cpu and memory parts, as Volcano's proportion plugin measures
  a share) while its pods run, and dashed, its weight's part of the weights of the queues
  that have jobs in the run;
- pending jobs by reason: the jobs submitted and not yet Running (nor finished), counted by
  the reason their PodGroup last gave (``timeline``'s ``podgroup`` entries), ``Pending``
  while none was given;
- the Gantt: per job a pale bar from its submission to its start (job phase Running) and
  a solid one on to its end (a final phase, or the end of the run), coloured by queue.

The capacity is the scenario's nodes' (a node added or removed by an event is not
counted). No script, no CDN: the styles are inline, the charts inline SVG. Pure: the page
is returned as text; the command writes it.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from html import escape
from typing import Any

from vcbus.contracts.quantity import to_base_units
from vcbus.core.views.charts import (
    GanttBar,
    Series,
    colour,
    count_label,
    gantt,
    line_chart,
    percent_label,
)
from vcbus.services.simulation.scenario import Scenario

RESOURCES = ("cpu", "memory")
"""The resources the utilisation and share charts show."""

BUCKETS = 200
"""Equal parts of the run each series has a point for: utilisation and shares are averaged
over each part (so a pod ending just before the next starts makes no spike), pending jobs
counted at its start."""

NO_REASON = "Pending"
"""The reason counted for a waiting job whose PodGroup gave none yet."""


@dataclass(frozen=True, slots=True)
class Cluster:
    """What the charts need of the scenario: capacity (base units) and queue weights."""

    capacity: Mapping[str, int]
    weights: Mapping[str, int]


def cluster_of(scenario: Scenario) -> Cluster:
    """The scenario's nodes' summed allocatable and its queues' weights (``default``: 1)."""
    capacity: dict[str, int] = {}
    for node in scenario.nodes:
        for name, amount in node.allocatable.items():
            capacity[name] = capacity.get(name, 0) + amount
    weights = {"default": 1} | {queue.name: queue.weight for queue in scenario.queues}
    return Cluster(capacity, weights)


@dataclass(frozen=True, slots=True)
class _Run:
    """A pod's requests (base units), its job's queue, and when it ran."""

    queue: str
    requests: Mapping[str, int]
    start: float
    end: float


def _float(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) else None


def _end(report: Mapping[str, Any]) -> float:
    """When the run stopped: its last known time."""
    times = [
        t
        for job in report.get("jobs", {}).values()
        for t in job.get("times", {}).values()
        if isinstance(t, int | float)
    ]
    times += [
        t
        for pod in report.get("pods", {}).values()
        for name in ("bound", "running", "finished")
        if isinstance(t := pod.get(name), int | float)
    ]
    times += [e["t"] for e in report.get("timeline", ()) if isinstance(e.get("t"), int | float)]
    return max(times, default=0.0)


def _pod_queues(report: Mapping[str, Any]) -> dict[str, str]:
    """``namespace/job-task`` → the job's queue (a pod is named ``job-task-index``)."""
    out: dict[str, str] = {}
    for key, job in report.get("jobs", {}).items():
        for task in job.get("tasks", {}):
            out[f"{key}-{task}"] = str(job.get("queue") or "default")
    return out


def _runs(report: Mapping[str, Any], end: float) -> list[_Run]:
    queues = _pod_queues(report)
    runs = []
    for key, pod in report.get("pods", {}).items():
        start = _float(pod.get("running"))
        if start is None:
            continue
        finished = _float(pod.get("finished"))
        requests = {n: to_base_units(n, q) for n, q in pod.get("requests", {}).items()}
        queue = queues.get(key.rsplit("-", 1)[0], "default")
        runs.append(_Run(queue, requests, start, finished if finished is not None else end))
    return runs


def _grid(end: float) -> list[float]:
    """The starts of the :data:`BUCKETS` equal buckets the run is cut into."""
    step = end / BUCKETS if end > 0 else 1.0
    return [i * step for i in range(BUCKETS)]


def _held(runs: Iterable[_Run], end: float) -> list[dict[str, dict[str, float]]]:
    """Per bucket, queue → resource → what its Running pods requested, averaged over it."""
    step = end / BUCKETS if end > 0 else 1.0
    out: list[dict[str, dict[str, float]]] = [{} for _ in range(BUCKETS)]
    for run in runs:
        first = max(int(run.start // step), 0)
        last = min(int(run.end // step), BUCKETS - 1)
        for index in range(first, last + 1):
            lo, hi = index * step, (index + 1) * step
            part = max(0.0, min(run.end, hi) - max(run.start, lo)) / step
            if part <= 0:
                continue
            queue = out[index].setdefault(run.queue, {})
            for name in RESOURCES:
                queue[name] = queue.get(name, 0.0) + run.requests.get(name, 0) * part
    return out


def utilisation_series(report: Mapping[str, Any], cluster: Cluster, end: float) -> list[Series]:
    """Per resource, the part of the capacity Running pods request, over the run."""
    held = _held(_runs(report, end), end)
    points: dict[str, list[tuple[float, float]]] = {name: [] for name in RESOURCES}
    for t, bucket in zip(_grid(end), held, strict=True):
        for name in RESOURCES:
            total = cluster.capacity.get(name, 0)
            used = sum(amounts.get(name, 0.0) for amounts in bucket.values())
            points[name].append((t, used / total if total > 0 else 0.0))
    return [Series(name, tuple(points[name])) for name in RESOURCES]


def share_series(report: Mapping[str, Any], cluster: Cluster, end: float) -> list[Series]:
    """Per queue its dominant share of the cluster over the run, and dashed its deserved one.

    The deserved share is the queue's weight's part of the weights of the queues that have
    jobs in the run.
    """
    runs = _runs(report, end)
    held = _held(runs, end)
    queues = sorted(
        {r.queue for r in runs}
        | {str(j.get("queue") or "default") for j in report.get("jobs", {}).values()}
    )
    weights = {q: cluster.weights.get(q, 1) for q in queues}
    all_weight = sum(weights.values()) or 1
    points: dict[str, list[tuple[float, float]]] = {q: [] for q in queues}
    for t, bucket in zip(_grid(end), held, strict=True):
        for queue in queues:
            amounts = bucket.get(queue, {})
            parts = [
                amounts.get(n, 0.0) / cluster.capacity[n]
                for n in RESOURCES
                if cluster.capacity.get(n, 0) > 0
            ]
            points[queue].append((t, max(parts, default=0.0)))
    out: list[Series] = []
    for index, queue in enumerate(queues):
        paint = colour(index)
        deserved = weights[queue] / all_weight
        out.append(Series(queue, tuple(points[queue]), paint))
        out.append(Series(f"{queue} deserved", ((0.0, deserved), (end, deserved)), paint, True))
    return out


def pending_series(report: Mapping[str, Any], end: float) -> list[Series]:
    """Jobs submitted and not Running nor finished, counted by their PodGroup's reason."""
    said: dict[str, list[tuple[float, str]]] = {}
    for entry in report.get("timeline", ()):
        if entry.get("event") == "podgroup" and isinstance(entry.get("t"), int | float):
            said.setdefault(str(entry["job"]), []).append(
                (float(entry["t"]), str(entry.get("reason") or NO_REASON))
            )
    waits: list[tuple[str, float, float]] = []
    for key, job in report.get("jobs", {}).items():
        times = job.get("times", {})
        submitted = _float(times.get("submitted", times.get("admitted")))
        if submitted is None:
            continue
        stop = _float(times.get("running", times.get("finished")))
        waits.append((key, submitted, stop if stop is not None else end))
    times = _grid(end)
    counts: list[dict[str, int]] = []
    for t in times:
        count: dict[str, int] = {}
        for key, lo, hi in waits:
            if lo <= t < hi:
                reason = _reason_at(said.get(key, []), t)
                count[reason] = count.get(reason, 0) + 1
        counts.append(count)
    reasons = sorted({r for count in counts for r in count})
    return [
        Series(
            reason, tuple((t, float(c.get(reason, 0))) for t, c in zip(times, counts, strict=True))
        )
        for reason in reasons
    ]


def _reason_at(entries: list[tuple[float, str]], t: float) -> str:
    index = bisect.bisect_right([at for at, _ in entries], t)
    return entries[index - 1][1] if index else NO_REASON


def gantt_bars(report: Mapping[str, Any]) -> list[GanttBar]:
    """One bar per job that was submitted, in order of submission (then name)."""
    bars = []
    for key, job in report.get("jobs", {}).items():
        times = job.get("times", {})
        submitted = _float(times.get("submitted", times.get("admitted")))
        if submitted is None:
            continue
        bars.append(
            GanttBar(
                job=key,
                queue=str(job.get("queue") or "default"),
                submitted=submitted,
                started=_float(times.get("running")),
                ended=_float(times.get("finished")),
                phase=str(job.get("phase", "")),
            )
        )
    return sorted(bars, key=lambda b: (b.submitted, b.job))


STYLE = """
body { margin: 1.5rem; font: 14px/1.45 system-ui, sans-serif; color: #1d2430; }
h1 { font-size: 1.4rem; } figure { margin: 0 0 1.5rem; }
figcaption { font-weight: 600; margin-bottom: .3rem; }
.legend { display: flex; flex-wrap: wrap; gap: .3rem 1rem; list-style: none; padding: 0;
  margin: .3rem 0 0; font-size: .85rem; }
.swatch { display: inline-block; width: .9rem; height: .5rem; margin-right: .3rem; }
.swatch.dashed { opacity: .5; }
table { border-collapse: collapse; } td, th { padding: .2rem .6rem; text-align: left; }
"""


def render_html(report: Mapping[str, Any], cluster: Cluster, *, title: str) -> str:
    """The whole page of a full-mode run's ``report``: its figures, charts and Gantt."""
    end = _end(report)
    summary = report.get("summary", {})
    jobs = report.get("jobs", {})
    phases: dict[str, int] = {}
    for job in jobs.values():
        phases[str(job.get("phase", ""))] = phases.get(str(job.get("phase", "")), 0) + 1
    facts = [
        ("Stopped by", str(report.get("stoppedBy", ""))),
        ("Ended at", f"{end:g}s"),
        ("Makespan", f"{summary['makespan']:g}s" if summary.get("makespan") is not None else "-"),
        ("Jobs", ", ".join(f"{n} {p}" for p, n in sorted(phases.items())) or "none"),
        ("Rejected", str(len(report.get("rejected", {})))),
    ]
    table = "".join(f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in facts)
    charts = [
        line_chart(
            "Cluster utilisation",
            utilisation_series(report, cluster, end),
            y_format=percent_label,
            y_max=1.0,
            x_range=(0.0, end),
        ),
        line_chart(
            "Queue share against deserved share (dashed)",
            share_series(report, cluster, end),
            y_format=percent_label,
            y_max=1.0,
            x_range=(0.0, end),
        ),
        line_chart(
            "Pending jobs by reason",
            pending_series(report, end),
            y_format=count_label,
            whole=True,
            x_range=(0.0, end),
        ),
        gantt("Jobs", gantt_bars(report), end=end),
    ]
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>vcbus simulate · {escape(title)}</title><style>{STYLE}</style></head><body>"
        f'<h1>vcbus simulate · {escape(title)}</h1><table class="facts">{table}</table>'
        f"{''.join(charts)}</body></html>\n"
    )

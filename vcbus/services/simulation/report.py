"""A ``vcbus simulate`` outcome printed: JSON (one line per flat entry) or tables and a timeline.

Both are pure functions of the outcome (plain data from ``vcbus.services.simulation.inprocess`` or
``vcbus.services.simulation.snapshot``), so the same outcome prints the same bytes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from vcbus.core.views.table import render_table


def render_json(outcome: Mapping[str, object]) -> str:
    """The outcome as JSON: keys sorted, two-space indent, one trailing newline.

    An object or list that holds only scalars (or lists or objects of scalars) is written
    on one line, so a timeline entry, a pod or a violation is one line of the output (and
    of a diff).
    """
    return _json(outcome, "") + "\n"


def _is_scalar(value: object) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def _is_flat(value: object) -> bool:
    if isinstance(value, list | tuple):
        return all(_is_scalar(item) for item in value)
    if isinstance(value, Mapping):
        return all(_is_scalar(item) for item in value.values())
    return _is_scalar(value)


def _json(value: object, pad: str) -> str:
    inner = pad + "  "
    if isinstance(value, Mapping) and value:
        if all(_is_flat(item) for item in value.values()):
            return json.dumps(value, sort_keys=True, ensure_ascii=False)
        items = (
            f"{inner}{json.dumps(str(key), ensure_ascii=False)}: {_json(value[key], inner)}"
            for key in sorted(value)
        )
        return "{\n" + ",\n".join(items) + f"\n{pad}}}"
    if isinstance(value, list | tuple) and value and not _is_flat(value):
        return "[\n" + ",\n".join(f"{inner}{_json(item, inner)}" for item in value) + f"\n{pad}]"
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def render_text(outcome: Mapping[str, Any]) -> str:
    """A full-mode outcome as tables and a timeline, for people."""
    lines: list[str] = []
    jobs = outcome.get("jobs")
    if isinstance(jobs, Mapping) and jobs:
        rows: list[tuple[str, ...]] = [("JOB", "PHASE", "PODGROUP", "TASKS", "REASON")]
        for key, job in jobs.items():
            tasks = ", ".join(
                f"{task} "
                + "/".join(str(counts[k]) for k in ("pending", "running", "succeeded", "failed"))
                for task, counts in job["tasks"].items()
            )
            rows.append((key, job["phase"], job["podgroup"], tasks, job["reason"]))
        lines += _table(rows)
        lines.append("  (tasks: pending/running/succeeded/failed)")
    pods = outcome.get("pods")
    if isinstance(pods, Mapping) and pods:
        lines.append("")
        rows = [("POD", "NODE", "PHASE")]
        for key, pod in pods.items():
            phase = pod["phase"] + (" (deleted)" if pod["deleted"] else "")
            rows.append((key, pod["node"] or "-", phase))
        lines += _table(rows)
    rejected = outcome.get("rejected")
    if isinstance(rejected, Mapping) and rejected:
        lines.append("")
        for key, violations in rejected.items():
            lines.append(f"rejected {key or '(unnamed)'}:")
            lines += [f"  {v['path']}: {v['reason']}: {v['message']}" for v in violations]
    if outcome.get("targetJob") or outcome.get("lockedNodes"):
        locked = ", ".join(outcome.get("lockedNodes") or []) or "-"
        lines.append(f"\ntarget job: {outcome.get('targetJob') or '-'}; locked nodes: {locked}")
    dead = outcome.get("deadLetters")
    if isinstance(dead, list) and dead:
        lines.append("\ndead letters (records a service could not handle):")
        lines += [f"  {d['topic']}: {d['count']} from {d['service']}" for d in dead]
    timeline = outcome.get("timeline")
    if isinstance(timeline, list):
        lines.append("\ntimeline:")
        lines += [f"  {entry['t']:>9.3f}s  {describe(entry)}" for entry in timeline]
    summary = outcome.get("summary")
    if isinstance(summary, Mapping):
        lines.append("")
        lines += summary_lines(summary)
    lines.append(f"\nstopped: {outcome.get('stoppedBy')}")
    return "\n".join(lines) + "\n"


def _spread(figures: Mapping[str, float], unit: str = "") -> str:
    return " ".join(f"{name} {figures[name]:g}{unit}" for name in ("avg", "p50", "p95", "max"))


def summary_lines(summary: Mapping[str, Any]) -> list[str]:
    """The summary's figures: makespan, utilisation, and the finished jobs' waits."""
    makespan = summary.get("makespan")
    used = ", ".join(f"{name} {value:g}" for name, value in summary["utilisation"].items())
    lines = [
        f"makespan: {'-' if makespan is None else f'{makespan:g}s'}; "
        f"utilisation: {used or '-'}; finished jobs: {summary['finishedJobs']}"
    ]
    if summary["finishedJobs"]:
        lines.append(f"bounded slowdown: {_spread(summary['boundedSlowdown'])}")
        lines.append(f"wait: {_spread(summary['wait'], 's')}")
        rows = [("SIZE (PODS)", "JOBS", "WAIT AVG", "P50", "P95", "MAX")]
        for name, waits in summary["waitBySize"].items():
            figures = (waits[k] for k in ("avg", "p50", "p95", "max"))
            rows.append((name, str(waits["jobs"]), *(f"{v:g}s" for v in figures)))
        lines += _table(rows)
    return lines


def describe(entry: Mapping[str, Any]) -> str:
    """One timeline entry as a sentence fragment."""
    get = entry.get
    extra = f" ({get('reason')})" if get("reason") else ""
    match get("event"):
        case "input" | "ignored":
            return f"{get('event')}: {get('input')}{extra}"
        case "node":
            return f"node {get('node')} {get('change')}"
        case "admitted":
            return f"admitted {get('job')}"
        case "rejected":
            return f"rejected {get('job') or '(unnamed)'}: {', '.join(get('reasons') or [])}"
        case "job" | "podgroup":
            return f"{get('event')} {get('job')} -> {get('phase')}{extra}"
        case "bind":
            return f"bind {get('pod')} -> {get('node')}"
        case "refused":
            return f"refused {get('pod')} on {get('node')}{extra}"
        case "pod":
            code = f", exit {get('exitCode')}" if get("exitCode") is not None else ""
            return f"pod {get('pod')} -> {get('phase')}{code}"
        case "evict":
            return f"evict {get('pod')} on {get('node')} ({get('reason')} by {get('taker')})"
        case "nominated":
            return f"nominated {', '.join(get('pods') or [])} for {get('job')}"
        case "nomination":
            return f"nomination of {get('job')} ended{extra}"
        case "elected":
            return f"target job {get('job')} elected"
        case "locked":
            return f"locked {', '.join(get('nodes') or [])} for {get('job')}"
        case "unlocked":
            return f"unlocked every node of {get('job')}"
        case _:
            return " ".join(f"{k}={v}" for k, v in sorted(entry.items()) if k != "t")


def _table(rows: Sequence[Sequence[str]]) -> list[str]:
    header, *body = rows
    return render_table(header, [tuple(map(str, row)) for row in body], gap=2)

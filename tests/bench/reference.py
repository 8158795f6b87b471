"""Reference batch schedulers for the trace cases of ``make quality``: FCFS, greedy, EASY.

A small discrete-event simulator of the classic policies on a machine of identical
processors (a rigid job needs its processors at once, for its run time), to set vcbus's
figures beside:

- ``fcfs``: strict first come, first served: the queue's head starts when it fits, and
  nothing passes it.
- ``greedy``: first fit: at every event, every waiting job that fits starts, in arrival
  order (Volcano's allocate without reservation).
- ``aging``: EASY backfill over the queue in vcbus's ``aging`` order (highest standing
  first, ``vcbus.core.scheduling.plugins.aging.standing`` at the default scale): the
  head is the first job of that order, and the backfill candidates are tried in it too.
- ``easy``: FCFS plus EASY backfill (Lifka, "The ANL/IBM SP scheduling system", JSSPP
  1995; Mu'alem and Feitelson, IEEE TPDS 12(6), 2001): when the head does not fit, its
  start is reserved at the earliest time the running jobs' limits free enough processors
  (the shadow time); a later job may start now if it fits and either ends by its limit
  before the shadow time or uses only the processors the head leaves then (the extra).

A job's limit is its requested time (its run time when it has none), as the SWF import's
``activeDeadlineSeconds``. The figures are ``vcbus.services.simulation.job_metrics``'s, so they read
the same as vcbus's summary.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from vcbus.core.scheduling.plugins.aging import DEFAULT_SCALE, standing
from vcbus.services.simulation.job_metrics import JobRun, job_metrics
from vcbus.services.simulation.swf import TraceJob, job_limit

POLICIES = ("fcfs", "greedy", "easy", "easy-sjbf", "aging")


@dataclass(frozen=True, slots=True)
class Job:
    """A job of the trace: when it came, how long it runs and its limit (seconds), how wide."""

    index: int
    submit: float
    run: float
    processors: int
    limit: float


class Machine:
    """The processors free, the jobs running and when each job started."""

    def __init__(self, processors: int) -> None:
        self.free = processors
        self.running: list[tuple[float, float, int, int]] = []
        """(end, limit end, index, processors), a heap on the actual end."""
        self.starts: dict[int, float] = {}

    def start(self, job: Job, now: float) -> None:
        self.free -= job.processors
        heapq.heappush(self.running, (now + job.run, now + job.limit, job.index, job.processors))
        self.starts[job.index] = now


Policy = Callable[[Machine, list[Job], float], None]
"""What decides at each event: starts jobs of the queue (arrival order) on the machine."""


def _fcfs(machine: Machine, queue: list[Job], now: float) -> None:
    while queue and queue[0].processors <= machine.free:
        machine.start(queue.pop(0), now)


def _greedy(machine: Machine, queue: list[Job], now: float) -> None:
    for job in list(queue):
        if job.processors <= machine.free:
            machine.start(job, now)
            queue.remove(job)


def _easy(machine: Machine, queue: list[Job], now: float) -> None:
    _backfill(machine, queue, now, shortest_first=False)


def _easy_sjbf(machine: Machine, queue: list[Job], now: float) -> None:
    _backfill(machine, queue, now, shortest_first=True)


def _aging(machine: Machine, queue: list[Job], now: float) -> None:
    scale = DEFAULT_SCALE.total_seconds()
    queue.sort(key=lambda j: (-standing(now - j.submit, j.limit, scale), j.submit, j.index))
    _backfill(machine, queue, now, shortest_first=False)


def _backfill(machine: Machine, queue: list[Job], now: float, *, shortest_first: bool) -> None:
    _fcfs(machine, queue, now)
    if not queue:
        return
    head = queue[0]
    free = machine.free
    shadow, extra = float("inf"), 0
    for _, limit_end, _, processors in sorted(machine.running, key=lambda r: (r[1], r[2])):
        free += processors
        if free >= head.processors:
            shadow, extra = limit_end, free - head.processors
            break
    candidates = queue[1:]
    if shortest_first:
        candidates = sorted(candidates, key=lambda j: (j.limit, j.index))
    for job in candidates:
        if job.processors > machine.free:
            continue
        if now + job.limit <= shadow:
            machine.start(job, now)
            queue.remove(job)
        elif job.processors <= extra:
            extra -= job.processors
            machine.start(job, now)
            queue.remove(job)


_POLICIES: dict[str, Policy] = {
    "fcfs": _fcfs,
    "greedy": _greedy,
    "easy": _easy,
    "easy-sjbf": _easy_sjbf,
    "aging": _aging,
}


def simulate(
    jobs: Sequence[TraceJob], processors: int, policy: str | Policy, walltime: str = "run"
) -> dict[str, object]:
    """Run ``jobs`` (submit times from the first's) under ``policy``; the summary figures.

    ``policy``: a name of :data:`POLICIES`, or a policy of its own (as
    ``tests.bench.reservations.reserving`` makes).

    Returns:
        ``job_metrics``'s figures, plus ``makespan`` and ``utilisation`` (processor-seconds
        run over processors x makespan).
    """
    todo, started = _replay(jobs, processors, policy, walltime)
    runs = [
        JobRun(
            pods=job.processors,
            submitted=job.submit,
            running=started[job.index],
            finished=started[job.index] + job.run,
        )
        for job in todo
    ]
    makespan = max((run.finished for run in runs), default=0.0)
    held = sum(job.processors * job.run for job in todo)
    utilisation = held / (processors * makespan) if makespan else 0.0
    return {
        "makespan": round(makespan, 3),
        "utilisation": round(utilisation, 4),
        **job_metrics(runs),
    }


def starts(
    jobs: Sequence[TraceJob], processors: int, policy: str | Policy, walltime: str = "run"
) -> list[float]:
    """When each of ``jobs`` starts under ``policy`` (seconds from the first's submission)."""
    todo, started = _replay(jobs, processors, policy, walltime)
    return [started[job.index] for job in todo]


def _replay(
    jobs: Sequence[TraceJob], processors: int, policy: str | Policy, walltime: str
) -> tuple[list[Job], dict[int, float]]:
    """The jobs as the policy sees them, and each one's start by index."""
    decide = _POLICIES[policy] if isinstance(policy, str) else policy
    origin = jobs[0].submit if jobs else 0
    todo = [
        Job(
            i,
            float(j.submit - origin),
            float(j.run),
            j.processors,
            float(job_limit(j, walltime) or j.run),
        )
        for i, j in enumerate(jobs)
    ]
    machine = Machine(processors)
    queue: list[Job] = []
    arrivals = sorted(todo, key=lambda j: (j.submit, j.index))
    position = 0
    now = 0.0
    while position < len(arrivals) or queue or machine.running:
        moments = []
        if position < len(arrivals):
            moments.append(arrivals[position].submit)
        if machine.running:
            moments.append(machine.running[0][0])
        now = min(moments)
        while machine.running and machine.running[0][0] <= now:
            _, _, _, freed = heapq.heappop(machine.running)
            machine.free += freed
        while position < len(arrivals) and arrivals[position].submit <= now:
            queue.append(arrivals[position])
            position += 1
        decide(machine, queue, now)
    return todo, machine.starts

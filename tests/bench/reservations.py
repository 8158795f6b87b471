"""Backfill with more than one reservation, for the reference simulator (``tests.bench.reference``).

EASY keeps one reservation: the queue's head gets the earliest start the running jobs'
limits give it, and a later job may start now only if that start does not move. Here a
policy keeps up to two, one after the other on a profile of the processors free over time
(the running jobs' limits, less each reservation made before), as Slurm's backfill with a
reservation depth above one, or conservative backfill limited to two (Mu'alem and
Feitelson, IEEE TPDS 12(6), 2001):

- the *oldest* waiting job (arrival order, what EASY protects: later jobs never delay the
  job that waited longest), once it has waited ``oldest_after`` seconds (``None``: never);
- the *head* of the ``aging`` order (``vcbus.core.scheduling.plugins.aging.standing``), the
  first job of that order that cannot start now, planned after the oldest's reservation
  (``oldest_first``; otherwise before it).

Every other job is tried in the aging order and starts now only if it fits the profile for
its whole limit (it delays neither reservation). With no oldest reservation this is EASY in
the aging order (the ``aging`` policy), and in arrival order (``aging=False``) it is EASY
itself, start for start. ``python -m tests.bench.reservations`` measures the settings of
:data:`SETTINGS` on every trace slice.
"""

from __future__ import annotations

from tests.bench.reference import Job, Machine, Policy, simulate
from tests.bench.traces import TRACE_CASES, TRACES
from vcbus.core.scheduling.plugins.aging import DEFAULT_SCALE, standing
from vcbus.services.simulation.swf import TraceJob, read_trace

Changes = list[tuple[float, int]]
"""(moment, processors given back: negative when taken), in time order, all after now."""


def _fits_now(changes: Changes, now: float, free: int, processors: int, limit: float) -> bool:
    """Whether ``processors`` stay free from ``now`` for ``limit`` seconds."""
    if free < processors:
        return False
    end, i = now + limit, 0
    while i < len(changes) and changes[i][0] < end:
        moment = changes[i][0]
        while i < len(changes) and changes[i][0] == moment:
            free += changes[i][1]
            i += 1
        if free < processors:
            return False
    return True


def earliest(changes: Changes, now: float, free: int, processors: int, limit: float) -> float:
    """The first moment ``processors`` stay free for ``limit`` seconds (inf: never)."""
    points = [(now, free)]
    for moment, delta in changes:
        free += delta
        if points[-1][0] == moment:
            points[-1] = (moment, free)
        else:
            points.append((moment, free))
    for i, (start, _) in enumerate(points):
        if all(f >= processors for t, f in points[i:] if t < start + limit):
            return start
    return float("inf")


def reserving(
    *,
    oldest_after: float | None,
    oldest_first: bool = True,
    oldest_count: int = 1,
    scale: float | None = None,
    aging: bool = True,
) -> Policy:
    """A policy keeping the oldest job's reservation and the aging head's (module doc).

    ``oldest_count``: how many of the oldest jobs (arrival order) get a reservation once
    each has waited ``oldest_after``; ``scale``: ``aging-scale`` in seconds (default the
    plugin's); ``aging`` False: arrival order instead of the aging order.
    """
    seconds = DEFAULT_SCALE.total_seconds() if scale is None else scale

    def decide(machine: Machine, queue: list[Job], now: float) -> None:
        if aging:
            queue.sort(
                key=lambda j: (-standing(now - j.submit, j.limit, seconds), j.submit, j.index)
            )
        else:
            queue.sort(key=lambda j: (j.submit, j.index))
        order = list(queue)
        oldest: list[Job] = []
        if oldest_after is not None:
            arrived = sorted(queue, key=lambda j: (j.submit, j.index))[:oldest_count]
            oldest = [job for job in arrived if now - job.submit >= oldest_after]
        if oldest_first:
            order = oldest + [job for job in order if job not in oldest]
        reserved: Changes = []

        def profile() -> Changes:
            return sorted([(end, p) for _, end, _, p in machine.running] + reserved)

        changes = profile()
        head_planned = False
        for job in order:
            if _fits_now(changes, now, machine.free, job.processors, job.limit):
                machine.start(job, now)
                queue.remove(job)
            elif job in oldest or not head_planned:
                head_planned = head_planned or job not in oldest
                start = earliest(changes, now, machine.free, job.processors, job.limit)
                reserved += [(start, -job.processors), (start + job.limit, job.processors)]
            else:
                continue
            changes = profile()

    return decide


HOUR = 3600.0
SETTINGS: tuple[tuple[str, Policy], ...] = (
    ("aging head alone (EASY in aging order)", reserving(oldest_after=None)),
    ("oldest, then aging head", reserving(oldest_after=0.0)),
    ("aging head, then oldest", reserving(oldest_after=0.0, oldest_first=False)),
    ("oldest after 12 h, then aging head", reserving(oldest_after=12 * HOUR)),
    ("oldest after 24 h, then aging head", reserving(oldest_after=24 * HOUR)),
    ("oldest after 30 h, then aging head", reserving(oldest_after=30 * HOUR)),
    ("oldest, then aging head; aging-scale 2 h", reserving(oldest_after=0.0, scale=2 * HOUR)),
    ("oldest, then aging head; aging-scale 0.5 h", reserving(oldest_after=0.0, scale=HOUR / 2)),
    (
        "aging head, then every job past 6 h",
        reserving(oldest_after=6 * HOUR, oldest_first=False, oldest_count=10**6),
    ),
    (
        "aging head, then every job past 18 h",
        reserving(oldest_after=18 * HOUR, oldest_first=False, oldest_count=10**6),
    ),
    (
        "aging head, then every job past 22 h",
        reserving(oldest_after=22 * HOUR, oldest_first=False, oldest_count=10**6),
    ),
)
"""The settings ``main`` measures (docs/performance.md, "Scheduling quality")."""


def _slices() -> list[tuple[str, list[TraceJob]]]:
    out = []
    for case in TRACE_CASES:
        trace = read_trace((TRACES / case.trace).read_text().splitlines())
        kept = [job for job in trace.jobs if job.processors <= (trace.processors or 1)]
        out.append((case.name, kept[case.start : case.start + case.count]))
    return out


def main() -> int:
    """Per setting, a table row: the slices meeting both targets, and what misses by how much.

    BSLD ÷ greedy's and the longest wait ÷ EASY's, their ranges over the lublin_256 slices.
    """
    slices = _slices()
    greedy = {name: simulate(jobs, PROCESSORS, "greedy") for name, jobs in slices}
    easy = {name: simulate(jobs, PROCESSORS, "easy") for name, jobs in slices}
    print("| setting | slices meeting both | BSLD ÷ greedy's | longest wait ÷ EASY's | misses |")
    print("|---|---|---|---|---|")
    for label, policy in SETTINGS:
        bslds, waits, misses, met = [], [], [], 0
        for name, jobs in slices:
            figures = simulate(jobs, PROCESSORS, policy)
            bsld = _avg(figures, "boundedSlowdown") / _avg(greedy[name], "boundedSlowdown")
            wait, bound = _max(figures, "wait"), _max(easy[name], "wait")
            if name.startswith("lublin_256"):
                bslds.append(bsld)
                waits.append(wait / bound)
            where = name.replace(".swf", "")
            if bsld > BSLD_BOUND:
                misses.append(f"{where} BSLD {bsld:.2f} x")
            if wait > bound + 1:
                misses.append(f"{where} wait {wait / bound:.3f} x")
            met += bsld <= BSLD_BOUND and wait <= bound + 1
        print(
            f"| {label} | {met} | {min(bslds):.2f}-{max(bslds):.2f} | "
            f"{min(waits):.3f}-{max(waits):.3f} | {'; '.join(misses) or '-'} |"
        )
    return 0


PROCESSORS = 256
"""Both traces' machine (their headers' ``MaxProcs``)."""
BSLD_BOUND = 1.1
"""The target: BSLD at most 1.1 x greedy's (and the longest wait at most EASY's + 1 s)."""


def _avg(figures: dict[str, object], name: str) -> float:
    return float(figures[name]["avg"])  # type: ignore[index]


def _max(figures: dict[str, object], name: str) -> float:
    return float(figures[name]["max"])  # type: ignore[index]


if __name__ == "__main__":
    raise SystemExit(main())

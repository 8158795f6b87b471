"""Aging: a queue order in which short jobs go first and a waiting job's standing grows.

A vcbus plugin (Volcano has none like it; its ``sla`` plugin ages a job only past a
configured waiting limit). It orders jobs by their *standing* at the session's time (``now``
from the cycle, never the wall clock):

    standing = wait / limit + (wait / scale) ** 2

where ``wait`` is ``now`` less the job's creation (its submission), ``limit`` its time limit
(its PodGroup's ``activeDeadlineSeconds``, at least :data:`LIMIT_FLOOR`) and ``scale`` the
argument ``aging-scale`` (default :data:`DEFAULT_SCALE`). The first term is the expansion
factor (the response ratio of HRRN less one: ``(wait + limit) / limit - 1``): among jobs that
waited alike the shortest goes first, and a short job that waits gains on a long one fast.
The second grows with the wait alone, faster and faster, so a long or wide job that short
ones keep passing rises until it is the head, whose planned start the session keeps (EASY's
reservation, ``framework.planning``). A job without a time limit counts as infinitely long:
its standing is the second term only, so among such jobs the order is their age, which is
the session's own fallback (older first): configurations without time limits decide as
before. Higher standing first; equal standing falls through to the next plugin and then to
age and uid (``SessionPlugins.job_compare``), so the order is total and the same every run.

With the argument ``aging-oldest-plan: true`` (default false), each queue's oldest waiting
job with a time limit (the first in arrival order, what EASY protects) goes first, and the
allocate action keeps two planned starts in the queue, the oldest's and then the head's
(the first job of the aging order that cannot start) around it: a later job starts now
only if it delays neither (``framework.planning.plan_around``). The longest-waiting job is
then never delayed by later ones, at the cost of the short jobs the aging order lets pass
(docs/performance.md, "Scheduling quality", measures both).

Place it last among the job-order plugins (``priority``, ``gang`` and ``drf`` decide first):
the default configurations do. docs/performance.md ("Scheduling quality") shows what it
gives on trace slices beside the reference policies, and how ``aging-scale`` was chosen.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta

from vcbus.contracts.keys import JobKey
from vcbus.core.scheduling.framework.arguments import get_bool, get_duration
from vcbus.core.scheduling.framework.conf import Arguments
from vcbus.core.scheduling.framework.session import Session
from vcbus.core.scheduling.model import JobInfo, naive_utc

NAME = "aging"
SCALE = "aging-scale"
OLDEST_PLAN = "aging-oldest-plan"
DEFAULT_SCALE = timedelta(hours=1)
LIMIT_FLOOR = 10.0
"""Seconds: a shorter limit counts as this long (the bounded slowdown's threshold), so a job
of a second's limit does not outrank every other after a moment's wait."""


def standing(wait: float, limit: float | None, scale: float) -> float:
    """A job's standing after ``wait`` seconds; ``limit`` None when it has none.

    Args:
        wait: seconds since the job was submitted (negative counts as 0).
        limit: its time limit in seconds, or None.
        scale: ``aging-scale`` in seconds (positive).
    """
    wait = max(wait, 0.0)
    age = (wait / scale) ** 2
    if limit is None:
        return age
    return wait / max(limit, LIMIT_FLOOR) + age


def _scale(arguments: Arguments) -> float:
    scale = get_duration(arguments, SCALE, DEFAULT_SCALE)
    if scale is None or scale <= timedelta(0):
        raise ValueError(f"{SCALE} must be positive, got {arguments.get(SCALE)!r}")
    return scale.total_seconds()


class AgingPlugin:
    """The ``aging`` plugin."""

    name = NAME

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments
        self.scale = _scale(arguments)
        self.oldest_plan = get_bool(arguments, OLDEST_PLAN, default=False)

    def on_session_open(self, ssn: Session) -> None:
        """Register the job order: higher standing first."""
        now = naive_utc(ssn.now)
        scale = self.scale
        known: dict[JobKey, float] = {}
        if self.oldest_plan:
            ssn.oldest_planned = _oldest_waiting(ssn)
            for key in ssn.oldest_planned.values():
                known[key] = math.inf

        def of(job: JobInfo) -> float:
            value = known.get(job.key)
            if value is None:
                value = _standing_at(job, now, scale)
                known[job.key] = value
            return value

        def job_order(left: JobInfo, right: JobInfo) -> int:
            left_standing, right_standing = of(left), of(right)
            if left_standing == right_standing:
                return 0
            return -1 if left_standing > right_standing else 1

        ssn.add_job_order_fn(NAME, job_order)

    def on_session_close(self, ssn: Session) -> None:
        """Nothing to report."""


def _oldest_waiting(ssn: Session) -> dict[str, JobKey]:
    """Per queue, its oldest job with a time limit that waits to start (age, then uid)."""
    oldest: dict[str, JobInfo] = {}
    for key in ssn.unsettled_jobs():
        job = ssn.jobs[key]
        if job.podgroup.active_deadline_seconds is None or job.is_pipelined():
            continue  # without a limit it gets no plan; pipelined, its gang is placed
        held = oldest.get(job.queue)
        if held is None or (job.creation_key, job.uid) < (held.creation_key, held.uid):
            oldest[job.queue] = job
    return {queue: job.key for queue, job in oldest.items()}


def _standing_at(job: JobInfo, now: datetime, scale: float) -> float:
    """``job``'s standing at ``now``; a job of unknown age counts from the epoch (first)."""
    wait = (now - job.creation_key).total_seconds()
    seconds = job.podgroup.active_deadline_seconds
    return standing(wait, None if seconds is None else float(seconds), scale)


def new(arguments: Arguments) -> AgingPlugin:
    """Build the plugin (``aging-scale`` is checked here, at start-up)."""
    return AgingPlugin(arguments)

"""The dashboard's charts over time: a bounded ring of samples of the store, and the charts.

Every ``VCBUS_DASHBOARD_SAMPLE_SECONDS`` (5 by default) the dashboard takes a
:class:`Sample` of what its store says now: what the Running pods use of the cluster (cpu,
memory), each queue's dominant share of the cluster (the larger of its cpu and memory
parts, as Volcano's proportion plugin measures a share) with its deserved share (its weight's
part of the open queues' weights), and the jobs Pending by the reason they wait. The ring
keeps the newest :data:`SAMPLES` (an hour at 5 s); it lives in the dashboard process only, so
a restarted dashboard starts its charts again. :func:`charts` draws them with the chart code
``simulate --html`` uses (:mod:`vcbus.core.views.charts`). No I/O here.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime

from vcbus.contracts import JobStatusChanged, Topic
from vcbus.contracts.objects import JobPhase
from vcbus.core.views.charts import (
    Series,
    ago_label,
    colour,
    count_label,
    line_chart,
    percent_label,
)
from vcbus.services.cli.dashboard.store import DashboardStore
from vcbus.services.cli.dashboard.views import queue_views
from vcbus.services.cli.status_store import reason_of
from vcbus.services.cli.usage import add, cluster_total, used_by_node, used_by_queue

SAMPLE_SECONDS = 5.0
"""Seconds between two samples by default (``VCBUS_DASHBOARD_SAMPLE_SECONDS``)."""

SAMPLES = 720
"""Samples kept (the newest)."""

RESOURCES = ("cpu", "memory")

CHART_WIDTH = 540
"""Pixels a chart is wide on the Overview (two side by side on a wide screen)."""

NO_REASON = "Pending"
"""The reason counted for a Pending job that gives none yet."""


def sample_seconds(environ: Mapping[str, str]) -> float:
    """``VCBUS_DASHBOARD_SAMPLE_SECONDS``, else :data:`SAMPLE_SECONDS`.

    Raises:
        ValueError: not a number of seconds from 0.1 to 3600.
    """
    raw = environ.get("VCBUS_DASHBOARD_SAMPLE_SECONDS", "").strip()
    if not raw:
        return SAMPLE_SECONDS
    try:
        seconds = float(raw)
    except ValueError:
        seconds = 0.0
    if not 0.1 <= seconds <= 3600:
        raise ValueError(
            f"VCBUS_DASHBOARD_SAMPLE_SECONDS={raw!r}: give the seconds between two samples "
            "of the charts (0.1 to 3600)"
        )
    return seconds


@dataclass(frozen=True, slots=True)
class Sample:
    """What the store said at ``at``: use, queue shares, Pending jobs by reason."""

    at: datetime
    utilisation: Mapping[str, float]
    """Resource → the part of the cluster's allocatable the Running pods request (0-1)."""
    shares: Mapping[str, tuple[float, float]]
    """Queue → (its dominant share of the cluster, its deserved share), 0-1 each."""
    pending: Mapping[str, int]
    """Reason → Pending jobs waiting for it."""


def take_sample(store: DashboardStore, at: datetime) -> Sample:
    """A sample of ``store`` at ``at``."""
    total = cluster_total(store)
    used: dict[str, int] = {}
    for amounts in used_by_node(store).values():
        add(used, amounts)
    held = used_by_queue(store)

    def part(amounts: Mapping[str, int], name: str) -> float:
        whole = total.get(name, 0)
        return amounts.get(name, 0) / whole if whole > 0 else 0.0

    shares = {
        queue.name: (
            max((part(held.get(queue.name, {}), n) for n in RESOURCES), default=0.0),
            queue.share / 100,
        )
        for queue in queue_views(store)
    }
    pending: dict[str, int] = {}
    for key in store.latest[Topic.JOBS_STATUS]:  # the Pending jobs only: a sample stays cheap
        status = store.get(Topic.JOBS_STATUS, key)
        if isinstance(status, JobStatusChanged) and status.phase == JobPhase.PENDING:
            why = reason_of(store, key, status)
            reason = why.code if why is not None and why.code != status.phase else NO_REASON
            pending[reason] = pending.get(reason, 0) + 1
    return Sample(
        at=at,
        utilisation={n: part(used, n) for n in RESOURCES},
        shares=shares,
        pending=dict(sorted(pending.items())),
    )


class Samples:
    """The newest :data:`SAMPLES` samples, oldest first."""

    def __init__(self, size: int = SAMPLES) -> None:
        self.ring: deque[Sample] = deque(maxlen=size)

    def add(self, sample: Sample) -> None:
        """Keep ``sample`` (the oldest goes once the ring is full)."""
        self.ring.append(sample)


def _x(sample: Sample, now: datetime) -> float:
    return (sample.at - now).total_seconds()


def charts(samples: Iterable[Sample], now: datetime) -> list[str]:
    """The three charts of the samples, x in seconds before ``now``."""
    taken = list(samples)
    span = (min((_x(s, now) for s in taken), default=-60.0), 0.0)
    utilisation = [
        Series(name, tuple((_x(s, now), s.utilisation.get(name, 0.0)) for s in taken))
        for name in RESOURCES
    ]
    queues = sorted({q for s in taken for q in s.shares})
    shares: list[Series] = []
    for index, queue in enumerate(queues):
        mine = [(_x(s, now), s.shares[queue]) for s in taken if queue in s.shares]
        paint = colour(index)
        shares.append(Series(queue, tuple((x, held) for x, (held, _) in mine), paint))
        shares.append(
            Series(f"{queue} deserved", tuple((x, due) for x, (_, due) in mine), paint, True)
        )
    reasons = sorted({r for s in taken for r in s.pending}) or ([NO_REASON] if taken else [])
    pending = [
        Series(reason, tuple((_x(s, now), float(s.pending.get(reason, 0))) for s in taken))
        for reason in reasons
    ]
    return [
        line_chart(
            "Cluster utilisation",
            utilisation if taken else [],
            x_format=ago_label,
            y_format=percent_label,
            y_max=1.0,
            x_range=span,
            width=CHART_WIDTH,
        ),
        line_chart(
            "Queue share against deserved share (dashed)",
            shares,
            x_format=ago_label,
            y_format=percent_label,
            y_max=1.0,
            x_range=span,
            width=CHART_WIDTH,
        ),
        line_chart(
            "Pending jobs by reason",
            pending,
            x_format=ago_label,
            y_format=count_label,
            whole=True,
            x_range=span,
            width=CHART_WIDTH,
        ),
    ]

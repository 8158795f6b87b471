"""Wiring of the job-controller: a reactor over jobs.admitted, podgroups.status, pods.status."""

from __future__ import annotations

import functools
from collections.abc import Mapping

from vcbus.contracts import Topic
from vcbus.contracts.limits import POD_PART_PODS
from vcbus.core.bus.router import Route
from vcbus.core.runtime.clock import Clock
from vcbus.core.runtime.reactor import Entry, Reactor, Resync
from vcbus.core.runtime.service import Service
from vcbus.core.runtime.settings import Settings
from vcbus.core.state.changelog import ChangelogStore

from .conf import ControllerConf
from .core import ControllerInput, decide, next_deadline, steps_pending
from .job_status import counts_superseded
from .state import JobRecord, RecordCodec

NAME = "job-controller"


def build_service(
    settings: Settings,
    clock: Clock,
    *,
    priority_classes: Mapping[str, int] | None = None,
    pods_per_part: int = POD_PART_PODS,
) -> Service:
    """The job-controller: per-job state in the ``jobs`` changelog, policy timeouts as timers.

    A job's state is written in records of at most ``pods_per_part`` pods each
    (:class:`~vcbus.services.job_controller.state.RecordCodec`).
    """
    store = ChangelogStore[Entry[JobRecord]](
        "jobs", Entry[JobRecord], codec=RecordCodec(Entry[JobRecord], pods_per_part)
    )
    conf = ControllerConf(priority_classes=dict(priority_classes or {}))
    reactor = Reactor[JobRecord, ControllerInput](
        functools.partial(decide, conf=conf),
        store,
        clock,
        next_deadline=next_deadline,
        resync=Resync(settings.resync_seconds, steps_pending),
    )
    return Service(
        name=NAME,
        routes=[
            Route(Topic.JOBS_ADMITTED, reactor.handle, "controller.reconcile"),
            Route(Topic.PODGROUPS_STATUS, reactor.handle, "controller.reconcile"),
            Route(Topic.PODS_STATUS, reactor.handle, "controller.reconcile"),
        ],
        stores=[store],
        timers=[reactor],
        on_restored=reactor.rebuild_timers,
        supersedes=counts_superseded,
    )

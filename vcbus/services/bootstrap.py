"""bootstrap(): the one composition root of vcbus (as cosmicpython's ``bootstrap``).

``vcbus serve`` builds one service with it, ``vcbus up`` every service (to create their
topics before it starts one process each) and ``vcbus simulate`` every service in one
process. They differ only in where the configuration comes from (command-line options,
a scenario) and in the clock (the system's, a virtual or a scaled one).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from vcbus.contracts.objects.node import Node
from vcbus.core.runtime.clock import Clock
from vcbus.core.runtime.service import Service
from vcbus.core.runtime.settings import Settings
from vcbus.core.scheduling.framework.conf import SchedulerConf
from vcbus.core.scheduling.framework.results import CycleObserver
from vcbus.services.admission import app as admission
from vcbus.services.allocator import app as allocator
from vcbus.services.cluster import app as cluster
from vcbus.services.cluster.core import ClusterConf
from vcbus.services.job_controller import app as job_controller
from vcbus.services.podgroup_enqueue import app as podgroup_enqueue


class CycleWatch(Protocol):
    """Who hears what each scheduling cycle decided (``vcbus simulate --cycles``' log)."""

    def observer(self, service: str, *, phases: bool = False) -> CycleObserver:
        """The ``on_cycle`` callback for ``service`` (``phases``: it publishes PodGroup phases)."""
        ...


@dataclass(frozen=True, kw_only=True)
class SystemConf:
    """How the services of one installation are configured.

    Attributes:
        priority_classes: job-controller: priority class name → value.
        enqueue_conf: podgroup-enqueue's scheduler configuration (``None``: its default).
        allocator_conf: the allocator's scheduler configuration (``None``: its default).
        nodes: cluster: the nodes it registers at start.
        cluster: cluster: how it runs pods.
        cycles: where the scheduling services tell what each cycle decided (``None``: nowhere).
    """

    priority_classes: Mapping[str, int] = field(default_factory=dict)
    enqueue_conf: SchedulerConf | None = None
    allocator_conf: SchedulerConf | None = None
    nodes: Sequence[Node] = ()
    cluster: ClusterConf = field(default_factory=ClusterConf)
    cycles: CycleWatch | None = None


Builder = Callable[[SystemConf, Settings, Clock], Service]


def _podgroup_enqueue(conf: SystemConf, settings: Settings, clock: Clock) -> Service:
    return podgroup_enqueue.build_service(
        settings,
        clock,
        conf=conf.enqueue_conf,
        on_cycle=(
            conf.cycles.observer(podgroup_enqueue.NAME, phases=True)
            if conf.cycles is not None
            else None
        ),
    )


def _allocator(conf: SystemConf, settings: Settings, clock: Clock) -> Service:
    return allocator.build_service(
        settings,
        clock,
        conf=conf.allocator_conf,
        on_cycle=conf.cycles.observer(allocator.NAME) if conf.cycles is not None else None,
    )


BUILDERS: Mapping[str, Builder] = {
    admission.NAME: lambda conf, settings, clock: admission.build_service(settings, clock),
    job_controller.NAME: lambda conf, settings, clock: job_controller.build_service(
        settings, clock, priority_classes=conf.priority_classes
    ),
    podgroup_enqueue.NAME: _podgroup_enqueue,
    allocator.NAME: _allocator,
    cluster.NAME: lambda conf, settings, clock: cluster.build_service(
        settings, clock, nodes=conf.nodes, conf=conf.cluster
    ),
}
"""How each service is built, by name."""

SERVICE_NAMES: tuple[str, ...] = tuple(BUILDERS)
"""Every service of the system, in the order a whole system is built."""


def bootstrap(
    conf: SystemConf,
    settings: Settings,
    clock: Clock,
    names: Sequence[str] = SERVICE_NAMES,
) -> list[Service]:
    """Build the services called ``names`` (every one by default), in that order.

    Args:
        conf: how the services are configured.
        settings: the installation's settings.
        clock: where the services' time comes from.
        names: which services, by name (keys of :data:`BUILDERS`).

    Returns:
        The services, ready for ``run_service`` or ``run_system``.
    """
    return [BUILDERS[name](conf, settings, clock) for name in names]

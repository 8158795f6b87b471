"""``vcbus serve SERVICE``: run one service against the broker, until SIGTERM or SIGINT.

Beside the service runs its health server (``vcbus.core.runtime.health``) on
``VCBUS_HEALTH_PORT`` [8080; ``0`` turns it off] of ``VCBUS_HEALTH_HOST`` [0.0.0.0]:
``/healthz``, ``/readyz`` and ``/metrics`` (Prometheus text). A port already in use is
logged and the service runs without it.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import signal
import socket
from collections.abc import Collection, Mapping
from pathlib import Path

import structlog
import yaml

from vcbus.contracts import TOPIC_SPECS, Topic
from vcbus.contracts.manifests import ManifestError, read_priority_class
from vcbus.contracts.objects.node import Node
from vcbus.core.bus.kafka import AioKafkaBus
from vcbus.core.logging.setup import configure_logging
from vcbus.core.runtime.clock import SystemClock
from vcbus.core.runtime.collector import tune_collector
from vcbus.core.runtime.health import HealthServer, readiness
from vcbus.core.runtime.service import Runtime, Service, run_service
from vcbus.core.runtime.settings import Settings, SettingsError
from vcbus.core.runtime.table import Table
from vcbus.core.runtime.topology import ensure_topics
from vcbus.core.scheduling.framework.conf import SchedulerConf
from vcbus.core.scheduling.scheduler import parse_conf, split_conf
from vcbus.core.telemetry import PendingPodGroups, ServiceMetrics
from vcbus.core.tracing.setup import configure_tracing, shutdown_tracing
from vcbus.services.allocator import app as allocator
from vcbus.services.bootstrap import SERVICE_NAMES, SystemConf, bootstrap
from vcbus.services.cluster import ClusterConf, build_nodes, load_nodes
from vcbus.services.cluster import app as cluster
from vcbus.services.job_controller import app as job_controller
from vcbus.services.podgroup_enqueue import app as podgroup_enqueue

DEFAULT_HEALTH_PORT = 8080
DEFAULT_HEALTH_HOST = "0.0.0.0"
"""All interfaces: probes and scrapes come from outside the container."""

log = structlog.get_logger("vcbus.serve")


@dataclasses.dataclass(frozen=True, slots=True)
class HealthOptions:
    """Where the health server listens; ``port=0`` binds a free port."""

    host: str = DEFAULT_HEALTH_HOST
    port: int = DEFAULT_HEALTH_PORT


def health_options(env: Mapping[str, str]) -> HealthOptions | None:
    """The health server's address from ``VCBUS_HEALTH_PORT`` and ``VCBUS_HEALTH_HOST``.

    Args:
        env: the environment.

    Returns:
        The options, or ``None`` when ``VCBUS_HEALTH_PORT=0`` turns the server off.

    Raises:
        SettingsError: the port is not a number from 0 to 65535.
    """
    raw = env.get("VCBUS_HEALTH_PORT", "") or str(DEFAULT_HEALTH_PORT)
    try:
        port = int(raw)
    except ValueError as exc:
        raise SettingsError(
            f"VCBUS_HEALTH_PORT={raw!r} is not a port number; set it like "
            f"VCBUS_HEALTH_PORT={DEFAULT_HEALTH_PORT} (0 turns the health server off)"
        ) from exc
    if not 0 <= port <= 65535:
        raise SettingsError(f"VCBUS_HEALTH_PORT={port} must be from 0 to 65535")
    if port == 0:
        return None
    return HealthOptions(host=env.get("VCBUS_HEALTH_HOST") or DEFAULT_HEALTH_HOST, port=port)


def _labels(pairs: list[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise SystemExit(f"--node-label takes key=value, got {pair!r}")
        out[key] = value
    return out


ENQUEUE_SIDE, ALLOCATOR_SIDE = 0, 1
"""The halves of :func:`vcbus.core.scheduling.scheduler.split_conf`."""


def scheduler_conf(path: str | None, side: int = ALLOCATOR_SIDE) -> SchedulerConf | None:
    """A volcano-scheduler.conf-shaped file, validated now (None: the service's default).

    Each Volcano plugin (or action's arguments) the file names and vcbus lacks is logged
    once, as a warning, and the service runs without it. A whole Volcano configuration,
    naming actions of both scheduling services (``enqueue, allocate, preempt, ...``), is
    split (``scheduler.split_conf``): the service given it runs its ``side``'s actions, so
    the same file serves podgroup-enqueue and the allocator.
    """
    if not path:
        return None
    conf = parse_conf(Path(path).read_text())
    for warning in conf.skipped:
        log.warning("scheduler_conf_skipped", path=path, detail=warning)
    sides = split_conf(conf)
    return sides[side] if all(half.actions for half in sides) else conf


def priority_classes(path: str | None) -> dict[str, int]:
    """A ``name: value`` map, or Kubernetes PriorityClass objects, from a YAML file.

    Raises:
        SettingsError: a PriorityClass object that does not read, or a value that is not
            a whole number, named with the document it is in.
    """
    if not path:
        return {}
    out: dict[str, int] = {}
    for index, document in enumerate(yaml.safe_load_all(Path(path).read_text())):
        if isinstance(document, Mapping) and "kind" in document:
            try:
                name, value = read_priority_class(document)
            except ManifestError as exc:
                raise SettingsError(f"{path} (document {index + 1}): {exc.at('')}") from None
            out[name] = value
        elif isinstance(document, Mapping):
            for key, number in document.items():
                if not isinstance(number, int) or isinstance(number, bool):
                    raise SettingsError(f"{path}: {key}: expected a whole number, got {number!r}")
                out[str(key)] = number
    return out


def system_conf(args: argparse.Namespace, names: Collection[str]) -> SystemConf:
    """The services' configuration from the command line, read for the services ``names``.

    A file only another service takes is not read (``vcbus serve admission`` ignores
    ``--scheduler-conf``).
    """
    nodes: tuple[Node, ...] = ()
    if cluster.NAME in names:
        nodes = tuple(
            load_nodes(Path(args.nodes_file).read_text())
            if args.nodes_file
            else build_nodes(
                args.nodes,
                cpu=args.node_cpu,
                memory=args.node_memory,
                pods=args.node_pods,
                labels=_labels(args.node_label),
            )
        )
    return SystemConf(
        priority_classes=(
            priority_classes(args.priority_classes) if job_controller.NAME in names else {}
        ),
        enqueue_conf=(
            scheduler_conf(args.enqueue_conf, ENQUEUE_SIDE)
            if podgroup_enqueue.NAME in names
            else None
        ),
        allocator_conf=scheduler_conf(args.scheduler_conf) if allocator.NAME in names else None,
        nodes=nodes,
        cluster=ClusterConf(start_delay_seconds=args.start_delay),
    )


def add_service_options(parser: argparse.ArgumentParser) -> None:
    """Options of the services (shared with ``vcbus up``)."""
    parser.add_argument("--scheduler-conf", help="allocator: volcano-scheduler.conf-shaped YAML")
    parser.add_argument(
        "--enqueue-conf", help="podgroup-enqueue: volcano-scheduler.conf-shaped YAML"
    )
    parser.add_argument("--priority-classes", help="YAML: name → value, or PriorityClass objects")
    parser.add_argument(
        "--nodes", type=int, default=10, help="cluster: number of simulated nodes [%(default)s]"
    )
    parser.add_argument("--node-cpu", default="8", help="cluster: cpu per node [%(default)s]")
    parser.add_argument(
        "--node-memory", default="32Gi", help="cluster: memory per node [%(default)s]"
    )
    parser.add_argument(
        "--node-pods", type=int, default=110, help="cluster: pods per node [%(default)s]"
    )
    parser.add_argument(
        "--node-label", action="append", default=[], help="cluster: key=value label"
    )
    parser.add_argument("--nodes-file", help="cluster: YAML/JSON list of nodes (overrides --nodes)")
    parser.add_argument(
        "--start-delay", type=float, default=0.0, help="cluster: seconds from bind to Running"
    )


def default_instance() -> str:
    """``VCBUS_INSTANCE``, else the host name: distinct per container of a replicated service."""
    return os.environ.get("VCBUS_INSTANCE") or socket.gethostname() or "0"


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``vcbus serve``."""
    parser = sub.add_parser("serve", help="run one service (as docker-compose and Kubernetes do)")
    parser.add_argument("service", choices=sorted(SERVICE_NAMES))
    parser.add_argument(
        "--instance",
        default=default_instance(),
        help="replica name, for client ids, logs and metrics "
        "[VCBUS_INSTANCE, else the host name: a container's or pod's own]",
    )
    add_service_options(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the chosen service until SIGTERM or SIGINT; 0 on a clean stop."""
    tune_collector()
    configure_logging(args.service, cache=True)
    configure_tracing(args.service)
    settings = Settings.from_env()
    kafka = settings.kafka
    log.info(
        "service_starting",
        instance=args.instance,
        bootstrap_servers=kafka.bootstrap_servers,
        security_protocol=kafka.security_protocol,
        sasl_mechanism=kafka.sasl_mechanism,
        sasl_username=kafka.sasl_username,
        ssl_cafile=kafka.ssl_cafile,
        ssl_certfile=kafka.ssl_certfile,
        topic_prefix=settings.topic_prefix,
        max_payload_bytes=settings.max_payload_bytes,
    )
    for warning in kafka.warnings():
        log.warning("unsafe_kafka_settings_accepted", warning=warning)
    health = health_options(os.environ)
    (service,) = bootstrap(
        system_conf(args, {args.service}), settings, SystemClock(), names=(args.service,)
    )
    try:
        asyncio.run(serve(service, settings, instance=args.instance, health=health))
    finally:
        shutdown_tracing()
    return 0


def with_metrics(service: Service, metrics: ServiceMetrics) -> Service:
    """``service``, plus what its metrics need to follow.

    The writer of ``podgroups.status`` (podgroup-enqueue) reports pending PodGroups by
    reason, folded from ``podgroups`` and ``podgroups.status`` as every replica reads them
    whole (so the gauge is right after a restart or a takeover too): through the table that
    already follows them, else through one more.
    """
    if TOPIC_SPECS[Topic.PODGROUPS_STATUS].writer != service.name:
        return service
    pending = PendingPodGroups()
    metrics.pending = pending
    needed = {Topic.PODGROUPS, Topic.PODGROUPS_STATUS}
    for table in service.tables:
        if needed <= set(table.topics):
            table.add_listener(pending.apply)
            return service
    table = Table("metrics", tuple(sorted(needed)), pending.apply)
    return dataclasses.replace(service, tables=[*service.tables, table])


async def serve(
    service: Service,
    settings: Settings,
    *,
    instance: str = "0",
    health: HealthOptions | None = None,
    handle_signals: bool = True,
    runtime: Runtime | None = None,
) -> None:
    """Create the topics, then run ``service`` with its metrics and health server.

    SIGTERM/SIGINT (with ``handle_signals``) or ``runtime.stopping`` stop it after its
    current batch.

    Args:
        service: the service to run.
        settings: the installation's settings.
        instance: the replica name, for client ids.
        health: where the health server listens; ``None``: no health server.
        handle_signals: whether SIGTERM and SIGINT stop the service.
        runtime: the runtime to use (tests keep a handle on it); made here when ``None``.
    """
    bus = AioKafkaBus(settings.kafka)
    await ensure_topics(bus, [service], settings.topic_prefix, settings.partitions, settings.topics)
    metrics = ServiceMetrics(service.name, instance=instance, prefix=settings.topic_prefix)
    service = with_metrics(service, metrics)
    runtime = runtime or Runtime(
        service.name, bus, SystemClock(), settings, bus.producer(client_id=service.name)
    )
    runtime.metrics = metrics
    metrics.is_active = lambda: runtime.lease is None or runtime.lease.is_active
    if handle_signals:
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, runtime.stopping.set)
    server: HealthServer | None = None
    if health is not None:
        server = HealthServer(
            ready=lambda: readiness(service, runtime),
            metrics=metrics.collect,
            host=health.host,
            port=health.port,
        )
        try:
            await server.start()
        except OSError as exc:
            log.warning("health_server_failed", host=health.host, port=health.port, error=str(exc))
            server = None
    try:
        await run_service(
            service, bus, settings, clock=runtime.clock, runtime=runtime, instance=instance
        )
    finally:
        if server is not None:
            await server.stop()
        metrics.close()

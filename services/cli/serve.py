"""``vcbus serve SERVICE``: run one service against the broker, until SIGTERM or SIGINT."""

from __future__ import annotations

import argparse
import asyncio
import signal
from collections.abc import Callable, Mapping
from pathlib import Path

import yaml

from services.admission import app as admission
from services.allocator import app as allocator
from services.cluster import app as cluster
from services.cluster.core import ClusterConf
from services.cluster.nodes import build_nodes, load_nodes
from services.job_controller import app as job_controller
from services.podgroup_enqueue import app as podgroup_enqueue
from shared.bus.kafka import AioKafkaBus
from shared.logging.setup import configure_logging
from shared.runtime.clock import SystemClock
from shared.runtime.service import Runtime, Service, run_service
from shared.runtime.settings import Settings
from shared.runtime.topology import ensure_topics
from shared.tracing.setup import configure_tracing, shutdown_tracing

Builder = Callable[[argparse.Namespace, Settings], Service]


def _labels(pairs: list[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise SystemExit(f"--node-label takes key=value, got {pair!r}")
        out[key] = value
    return out


def priority_classes(path: str | None) -> dict[str, int]:
    """A ``name: value`` map, or Kubernetes PriorityClass objects, from a YAML file."""
    if not path:
        return {}
    out: dict[str, int] = {}
    for document in yaml.safe_load_all(Path(path).read_text()):
        if isinstance(document, Mapping) and document.get("kind") == "PriorityClass":
            out[str(document["metadata"]["name"])] = int(document["value"])
        elif isinstance(document, Mapping):
            out.update({str(k): int(v) for k, v in document.items()})
    return out


BUILDERS: dict[str, Builder] = {
    "admission": lambda args, settings: admission.build_service(settings, SystemClock()),
    "job-controller": lambda args, settings: job_controller.build_service(
        settings, SystemClock(), priority_classes=priority_classes(args.priority_classes)
    ),
    "podgroup-enqueue": lambda args, settings: podgroup_enqueue.build_service(
        settings, SystemClock(), conf=podgroup_enqueue.load_conf(args.enqueue_conf)
    ),
    "allocator": lambda args, settings: allocator.build_service(
        settings, SystemClock(), conf=allocator.load_conf(args.scheduler_conf)
    ),
    "cluster": lambda args, settings: cluster.build_service(
        settings,
        SystemClock(),
        nodes=load_nodes(Path(args.nodes_file).read_text())
        if args.nodes_file
        else build_nodes(
            args.nodes,
            cpu=args.node_cpu,
            memory=args.node_memory,
            pods=args.node_pods,
            labels=_labels(args.node_label),
        ),
        conf=ClusterConf(start_delay_seconds=args.start_delay),
    ),
}


def add_service_options(parser: argparse.ArgumentParser) -> None:
    """Options of the services (shared with ``vcbus up``)."""
    parser.add_argument("--scheduler-conf", help="allocator: volcano-scheduler.conf-shaped YAML")
    parser.add_argument(
        "--enqueue-conf", help="podgroup-enqueue: volcano-scheduler.conf-shaped YAML"
    )
    parser.add_argument("--priority-classes", help="YAML: name → value, or PriorityClass objects")
    parser.add_argument(
        "--nodes", type=int, default=10, help="cluster: number of simulated nodes [10]"
    )
    parser.add_argument("--node-cpu", default="8", help="cluster: cpu per node [8]")
    parser.add_argument("--node-memory", default="32Gi", help="cluster: memory per node [32Gi]")
    parser.add_argument("--node-pods", type=int, default=110, help="cluster: pods per node [110]")
    parser.add_argument(
        "--node-label", action="append", default=[], help="cluster: key=value label"
    )
    parser.add_argument("--nodes-file", help="cluster: YAML/JSON list of nodes (overrides --nodes)")
    parser.add_argument(
        "--start-delay", type=float, default=0.0, help="cluster: seconds from bind to Running"
    )


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``vcbus serve``."""
    parser = sub.add_parser("serve", help="run one service (as docker-compose and Kubernetes do)")
    parser.add_argument("service", choices=sorted(BUILDERS))
    parser.add_argument("--instance", default="0", help="replica name, for client ids and logs")
    add_service_options(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the chosen service until SIGTERM or SIGINT; 0 on a clean stop."""
    configure_logging(args.service)
    configure_tracing(args.service)
    settings = Settings.from_env()
    service = BUILDERS[args.service](args, settings)
    try:
        asyncio.run(serve(service, settings, instance=args.instance))
    finally:
        shutdown_tracing()
    return 0


async def serve(service: Service, settings: Settings, *, instance: str = "0") -> None:
    """Create the topics, then run ``service``; SIGTERM/SIGINT stop it after its current batch."""
    bus = AioKafkaBus(settings.kafka)
    await ensure_topics(bus, [service], settings.topic_prefix, settings.partitions)
    runtime = Runtime(
        service.name, bus, SystemClock(), settings, bus.producer(client_id=service.name)
    )
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, runtime.stopping.set)
    await run_service(
        service, bus, settings, clock=runtime.clock, runtime=runtime, instance=instance
    )

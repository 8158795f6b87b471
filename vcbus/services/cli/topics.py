"""``vcbus topics``: create every topic of the installation, as the topic table says.

The topic step of docker-compose.yml and of the Kubernetes Job (deploy/k8s/topics-job.yaml)
runs it before any service starts, so the services find their topics made by the same
table they would use themselves. Each topic is printed with its partitions, replication
factor and configs; ``--dry-run`` creates nothing. Topics that exist are left as they are,
and those whose partitions, replication factor or configs differ from the table are named
on standard error with each difference (an installation made before the table, a broker
edited by hand), with how to change them.
"""

from __future__ import annotations

import argparse
import asyncio

from vcbus.core.bus.kafka import AioKafkaBus
from vcbus.core.bus.records import TopicConfig
from vcbus.core.runtime.clock import SystemClock
from vcbus.core.runtime.settings import Settings
from vcbus.core.runtime.topology import drift, topic_configs
from vcbus.services.bootstrap import SERVICE_NAMES, bootstrap
from vcbus.services.cli import terminal
from vcbus.services.cli.serve import add_service_options, system_conf


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``vcbus topics``."""
    parser = sub.add_parser(
        "topics", help="create the installation's topics (the topic table's) that are missing"
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="print the topics and their settings only"
    )
    parser.set_defaults(func=run)


def installation_topics(settings: Settings) -> list[TopicConfig]:
    """Every topic of the contracts and of every service (its defaults), as the table says."""
    parser = argparse.ArgumentParser()
    add_service_options(parser)
    defaults = parser.parse_args([])
    services = bootstrap(system_conf(defaults, SERVICE_NAMES), settings, SystemClock())
    return topic_configs(services, settings.topic_prefix, settings.partitions, settings.topics)


def describe(topic: TopicConfig) -> str:
    """One line: name, partitions, replication factor and configs."""
    configs = " ".join(f"{key}={value}" for key, value in sorted(topic.configs.items()))
    return (
        f"{topic.name}  partitions={topic.partitions}  "
        f"replication-factor={topic.replication_factor}  {configs}".rstrip()
    )


def run(args: argparse.Namespace) -> int:
    """Create the missing topics (unless ``--dry-run``) and print every topic.

    Those that exist with other settings than the table's are named (left as they are).
    """
    settings = Settings.from_env()
    topics = installation_topics(settings)
    found = asyncio.run(_apply(AioKafkaBus(settings.kafka), topics, create=not args.dry_run))
    terminal.write(f"topic table: {settings.topics.source}\n")
    terminal.write("".join(describe(topic) + "\n" for topic in topics))
    differing = [
        (topic.name, differences)
        for topic in topics
        if topic.name in found and (differences := drift(topic, found[topic.name]))
    ]
    for name, differences in differing:
        terminal.error(f"{name} differs from the table: {'; '.join(differences)}\n")
    if differing:
        terminal.error(
            "topics that exist are left as they are: change their configs with "
            "kafka-configs.sh --alter, their replicas with kafka-reassign-partitions.sh\n"
        )
    return 0


async def _apply(
    bus: AioKafkaBus, topics: list[TopicConfig], *, create: bool
) -> dict[str, TopicConfig]:
    if create:
        await bus.ensure_topics(topics)
    return await bus.existing_topics([topic.name for topic in topics])

"""``vcbus topics``: create every topic of the installation, as ``deploy/topics.yaml`` says.

The topic step of docker-compose.yml and of the Kubernetes Job (deploy/k8s/topics-job.yaml)
runs it before any service starts, so the services find their topics made by the same
table they would use themselves. Topics that exist are left as they are. Each topic is
printed with its partitions, replication factor and configs; ``--dry-run`` only prints.
"""

from __future__ import annotations

import argparse
import asyncio

from services.cli import terminal
from services.cli.serve import BUILDERS, add_service_options
from shared.bus.kafka import AioKafkaBus
from shared.bus.records import TopicConfig
from shared.runtime.settings import Settings
from shared.runtime.topology import topic_configs


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``vcbus topics``."""
    parser = sub.add_parser(
        "topics", help="create the installation's topics (deploy/topics.yaml) that are missing"
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
    services = [build(defaults, settings) for build in BUILDERS.values()]
    return topic_configs(services, settings.topic_prefix, settings.partitions, settings.topics)


def describe(topic: TopicConfig) -> str:
    """One line: name, partitions, replication factor and configs."""
    configs = " ".join(f"{key}={value}" for key, value in sorted(topic.configs.items()))
    return (
        f"{topic.name}  partitions={topic.partitions}  "
        f"replication-factor={topic.replication_factor}  {configs}".rstrip()
    )


def run(args: argparse.Namespace) -> int:
    """Create the missing topics (unless ``--dry-run``) and print every topic."""
    settings = Settings.from_env()
    topics = installation_topics(settings)
    if not args.dry_run:
        asyncio.run(AioKafkaBus(settings.kafka).ensure_topics(topics))
    terminal.write(f"topic table: {settings.topics.source}\n")
    terminal.write("".join(describe(topic) + "\n" for topic in topics))
    return 0

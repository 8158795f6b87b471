"""Which topics an installation needs, with their partitions and compaction."""

from __future__ import annotations

from collections.abc import Sequence

from contracts.topics import DLT_SUFFIX, TOPICS
from shared.bus.protocol import Bus
from shared.bus.records import TopicConfig
from shared.runtime.service import Service, changelog_topic, lease_topic


def contract_topics(prefix: str, partitions: int) -> list[TopicConfig]:
    """Every topic of the topic table and its dead-letter topic."""
    out: list[TopicConfig] = []
    for spec in TOPICS:
        out.append(TopicConfig(f"{prefix}{spec.topic}", partitions))
        out.append(TopicConfig(f"{prefix}{spec.topic}{DLT_SUFFIX}", partitions))
    return out


def service_topics(service: Service, prefix: str, partitions: int) -> list[TopicConfig]:
    """A service's changelog topics (compacted, co-partitioned) and its lease topic."""
    out = [
        TopicConfig(changelog_topic(prefix, service.name, store.name), partitions, compacted=True)
        for store in service.stores
    ]
    if service.singleton:
        out.append(TopicConfig(lease_topic(prefix, service.name), 1))
    return out


async def ensure_topics(
    bus: Bus, services: Sequence[Service], prefix: str, partitions: int
) -> None:
    """Create the contract topics and the topics of ``services`` that do not exist yet."""
    configs = contract_topics(prefix, partitions)
    for service in services:
        configs.extend(service_topics(service, prefix, partitions))
    await bus.ensure_topics(configs)

"""Which topics an installation needs, with their partitions and their table policies."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from vcbus.contracts.topics import DLT_SUFFIX, TOPICS
from vcbus.core.bus.protocol import Bus
from vcbus.core.bus.records import TopicConfig
from vcbus.core.runtime.topic_table import BUILT_IN, TopicTable, TopicTableError


class _Named(Protocol):
    @property
    def name(self) -> str: ...


class _Follows(Protocol):
    @property
    def topics(self) -> Sequence[str]: ...


class ServiceTopics(Protocol):
    """What a service's topics follow from (a :class:`vcbus.core.runtime.service.Service`).

    Read through this shape so that the CLI, which ensures topics with no service, does
    not import the runtime, and the runtime names its topics here.
    """

    @property
    def name(self) -> str:
        """The service's name, in its topics' names."""
        ...

    @property
    def stores(self) -> Sequence[_Named]:
        """Its changelog-backed stores, one changelog topic each."""
        ...

    @property
    def tables(self) -> Sequence[_Follows]:
        """The tables it rebuilds from whole topics."""
        ...

    @property
    def singleton(self) -> bool:
        """Whether it runs one active replica (a lease topic)."""
        ...


def changelog_topic(prefix: str, service: str, store: str) -> str:
    """Changelog topic of a store: ``vcbus.<service>.<store>.changelog``."""
    return f"{prefix}{service}.{store}.changelog"


def lease_topic(prefix: str, service: str) -> str:
    """Lease topic of a singleton service."""
    return f"{prefix}{service}.lease"


def _config(table: TopicTable, prefix: str, topic: str, partitions: int) -> TopicConfig:
    policy = table.policy(topic)
    return TopicConfig(
        f"{prefix}{topic}", partitions, policy.replication_factor, dict(policy.configs)
    )


def contract_topics(table: TopicTable, prefix: str, partitions: int) -> list[TopicConfig]:
    """Every topic of the contracts' topic table and its dead-letter topic."""
    out: list[TopicConfig] = []
    for spec in TOPICS:
        out.append(_config(table, prefix, spec.topic, partitions))
        out.append(_config(table, prefix, f"{spec.topic}{DLT_SUFFIX}", partitions))
    return out


def service_topics(
    table: TopicTable, service: ServiceTopics, prefix: str, partitions: int
) -> list[TopicConfig]:
    """A service's changelog topics (co-partitioned) and its lease topic (one partition).

    Raises:
        TopicTableError: when the table would let the broker delete by time or size what
            the service's state or views are rebuilt from (its changelogs, its tables).
    """
    rebuilt = [
        (changelog_topic("", service.name, store.name), "keeps its state in")
        for store in service.stores
    ]
    rebuilt += [
        (topic, "rebuilds its view from")
        for follower in service.tables
        for topic in follower.topics
    ]
    for topic, how in rebuilt:
        if not table.policy(topic).kept:
            raise TopicTableError(
                f"{table.source}: {service.name} {how} {topic}, which the broker would "
                "delete by time or size: give it config {cleanup.policy: compact} (or "
                "{retention.ms: -1})"
            )
    out = [
        _config(table, prefix, changelog_topic("", service.name, store.name), partitions)
        for store in service.stores
    ]
    if service.singleton:
        out.append(_config(table, prefix, lease_topic("", service.name), 1))
    return out


def topic_configs(
    services: Sequence[ServiceTopics], prefix: str, partitions: int, table: TopicTable = BUILT_IN
) -> list[TopicConfig]:
    """The contract topics and the topics of ``services``, as ``table`` says.

    Raises:
        TopicTableError: see :func:`service_topics`.
    """
    configs = contract_topics(table, prefix, partitions)
    for service in services:
        configs.extend(service_topics(table, service, prefix, partitions))
    return configs


def drift(wanted: TopicConfig, found: TopicConfig) -> list[str]:
    """How a topic as the broker has it differs from what the table asks.

    One item per setting: partitions, replication factor, and each config the table sets.
    """
    out = [
        f"{name}={have} (table: {want})"
        for name, have, want in (
            ("partitions", found.partitions, wanted.partitions),
            ("replication-factor", found.replication_factor, wanted.replication_factor),
        )
        if have != want
    ]
    for key, want in sorted(wanted.configs.items()):
        have = found.configs.get(key)
        if have != want:
            out.append(f"{key}={'(unset)' if have is None else have} (table: {want})")
    return out


async def ensure_topics(
    bus: Bus,
    services: Sequence[ServiceTopics],
    prefix: str,
    partitions: int,
    table: TopicTable = BUILT_IN,
) -> None:
    """Create the missing contract topics and topics of ``services``, as ``table`` says.

    The installation's table is ``Settings.topics``; the built-in one keeps everything.
    """
    await bus.ensure_topics(topic_configs(services, prefix, partitions, table))

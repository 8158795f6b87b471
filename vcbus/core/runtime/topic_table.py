"""The topic table (``topics.yaml`` beside this module): how each topic is created on the broker.

One file says, per topic, its replication factor and its topic configs (``cleanup.policy``,
``retention.ms``, ``min.insync.replicas`` ...), over defaults for the whole table. Every
service reads it before creating a missing topic, and so do ``vcbus topics`` (the topic
steps of docker-compose.yml and the Kubernetes Job) and every CLI command: one source.
Partition counts are not in it: ``VCBUS_PARTITIONS`` (leases have one).

The file is found at ``VCBUS_TOPICS_FILE``, else it is the one shipped in the package (package
data, read through ``importlib.resources``: a checkout, an installed wheel and the image alike).
``VCBUS_REPLICATION_FACTOR`` and ``VCBUS_MIN_INSYNC_REPLICAS`` override the table for every
topic: a Kafka of fewer than three brokers needs them (the table's defaults, 3 and 2,
suit three brokers or more, and the embedded broker, which keeps one copy whatever it is
asked). A table that cannot be used is refused with the file, the topic and the fix.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

import yaml

SHIPPED_TABLE: Traversable = resources.files(__name__.rpartition(".")[0]) / "topics.yaml"
"""The table shipped with the package (package data beside this module)."""

CLEANUP_POLICIES = frozenset({"delete", "compact", "compact,delete", "delete,compact"})
_TOP_KEYS = frozenset({"defaults", "topics"})
_DEFAULT_KEYS = frozenset({"replicationFactor", "config"})
_TOPIC_KEYS = frozenset({"name", "writer", "key", "deadLetterOf", "replicationFactor", "config"})
_INT_CONFIGS = frozenset(
    {"retention.ms", "retention.bytes", "min.insync.replicas", "max.message.bytes"}
)


class TopicTableError(ValueError):
    """The topic table cannot be used; the message names the file, the topic and the fix."""


@dataclass(frozen=True, slots=True)
class TopicPolicy:
    """How one topic is created: its replication factor and topic configs."""

    replication_factor: int
    configs: Mapping[str, str] = field(default_factory=dict)

    @property
    def kept(self) -> bool:
        """Whether no record is ever deleted by time or size (only compaction replaces)."""
        cleanup = self.configs.get("cleanup.policy", "delete")
        if cleanup == "compact":
            return True
        return (
            cleanup == "delete"
            and self.configs.get("retention.ms") == "-1"
            and self.configs.get("retention.bytes", "-1") == "-1"
        )


@dataclass(frozen=True, slots=True)
class TopicTable:
    """Per-topic policies (by name without prefix) over a default one."""

    default: TopicPolicy = TopicPolicy(1, {"retention.ms": "-1"})
    topics: Mapping[str, TopicPolicy] = field(default_factory=dict)
    source: str = "the built-in topic table"

    def policy(self, topic: str) -> TopicPolicy:
        """The policy of ``topic`` (its name without prefix); the default when not listed."""
        return self.topics.get(topic, self.default)

    def with_cluster(
        self, replication_factor: int | None, min_insync_replicas: int | None
    ) -> TopicTable:
        """Set every topic's replication factor and ``min.insync.replicas`` (the cluster's).

        ``None`` keeps the table's value.

        Raises:
            TopicTableError: when a topic would need more in-sync replicas than copies.
        """

        def adjust(policy: TopicPolicy) -> TopicPolicy:
            configs = dict(policy.configs)
            if min_insync_replicas is not None:
                configs["min.insync.replicas"] = str(min_insync_replicas)
            return TopicPolicy(replication_factor or policy.replication_factor, configs)

        table = replace(
            self,
            default=adjust(self.default),
            topics={name: adjust(policy) for name, policy in self.topics.items()},
        )
        for name, policy in (("defaults", table.default), *table.topics.items()):
            _check_insync(policy, f"{table.source}: {name}")
        return table


BUILT_IN = TopicTable()
"""The table without a file (in-memory runs): one copy, nothing deleted."""


def table_path(env: Mapping[str, str]) -> Traversable:
    """Where the topic table is: ``VCBUS_TOPICS_FILE``, else the one shipped in the package."""
    raw = env.get("VCBUS_TOPICS_FILE", "")
    return Path(raw) if raw else SHIPPED_TABLE


def load_topic_table(path: Traversable) -> TopicTable:
    """Read and check the topic table at ``path``.

    Raises:
        TopicTableError: the file is missing, not YAML, or a value cannot be used.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise TopicTableError(
            f"topic table {path}: cannot read it ({exc.strerror}); set VCBUS_TOPICS_FILE "
            f"to a topic table (the one shipped with vcbus is {SHIPPED_TABLE})"
        ) from None
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise TopicTableError(f"topic table {path}: not YAML: {exc}") from None
    return parse_topic_table(document, str(path))


def parse_topic_table(document: object, source: str) -> TopicTable:
    """Check a parsed topic table (``source`` names it in errors).

    Raises:
        TopicTableError: when a value cannot be used.
    """
    top = _mapping(document, source, _TOP_KEYS)
    defaults = _mapping(top.get("defaults", {}), f"{source}: defaults", _DEFAULT_KEYS)
    default = _policy(defaults, TopicPolicy(1), f"{source}: defaults")
    entries = top.get("topics", [])
    if not isinstance(entries, list):
        raise TopicTableError(f"{source}: topics must be a list of {{name: ..., ...}}")
    topics: dict[str, TopicPolicy] = {}
    for number, entry in enumerate(entries):
        item = _mapping(entry, f"{source}: topics[{number}]", _TOPIC_KEYS)
        name = item.get("name")
        if not isinstance(name, str) or not name:
            raise TopicTableError(f"{source}: topics[{number}] has no name")
        if name in topics:
            raise TopicTableError(f"{source}: topic {name} is listed twice")
        topics[name] = _policy(item, default, f"{source}: {name}")
    return TopicTable(default, topics, source)


def _mapping(value: object, where: str, allowed: frozenset[str]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise TopicTableError(f"{where}: must be a mapping")
    unknown = sorted(str(key) for key in value if key not in allowed)
    if unknown:
        raise TopicTableError(
            f"{where}: unknown field(s) {', '.join(unknown)}; known: {', '.join(sorted(allowed))}"
        )
    return value


def _policy(item: Mapping[str, Any], base: TopicPolicy, where: str) -> TopicPolicy:
    replication = item.get("replicationFactor", base.replication_factor)
    if isinstance(replication, bool) or not isinstance(replication, int) or replication < 1:
        raise TopicTableError(f"{where}: replicationFactor must be a whole number ≥ 1")
    raw = item.get("config", {})
    if not isinstance(raw, dict):
        raise TopicTableError(f"{where}: config must be a mapping of Kafka topic configs")
    configs = dict(base.configs)
    for key, value in raw.items():
        if not isinstance(key, str) or isinstance(value, bool | dict | list) or value is None:
            raise TopicTableError(f"{where}: config {key!r} must be a name and a plain value")
        configs[key] = str(value)
    cleanup = configs.get("cleanup.policy", "delete")
    if cleanup not in CLEANUP_POLICIES:
        known = ", ".join(sorted(CLEANUP_POLICIES))
        raise TopicTableError(f"{where}: cleanup.policy {cleanup!r} is not one of {known}")
    for key in sorted(_INT_CONFIGS & configs.keys()):
        text = configs[key]
        minimum = 1 if key in ("min.insync.replicas", "max.message.bytes") else -1
        if not text.lstrip("-").isdigit() or not text.isascii() or int(text) < minimum:
            raise TopicTableError(f"{where}: {key} {text!r} must be a whole number ≥ {minimum}")
    policy = TopicPolicy(replication, configs)
    _check_insync(policy, where)
    return policy


def _check_insync(policy: TopicPolicy, where: str) -> None:
    insync = int(policy.configs.get("min.insync.replicas", "1"))
    if insync > policy.replication_factor:
        raise TopicTableError(
            f"{where}: min.insync.replicas {insync} is more than the replication factor "
            f"{policy.replication_factor}: no write could ever be acknowledged (set "
            "VCBUS_MIN_INSYNC_REPLICAS with VCBUS_REPLICATION_FACTOR)"
        )


def topic_table(env: Mapping[str, str] | None = None) -> TopicTable:
    """The installation's table: the file, then the environment's overrides.

    Raises:
        TopicTableError: the table or an override cannot be used.
    """
    env = os.environ if env is None else env
    table = load_topic_table(table_path(env))
    return table.with_cluster(
        _positive(env, "VCBUS_REPLICATION_FACTOR"), _positive(env, "VCBUS_MIN_INSYNC_REPLICAS")
    )


def _positive(env: Mapping[str, str], name: str) -> int | None:
    raw = env.get(name, "")
    if not raw:
        return None
    if not raw.isascii() or not raw.isdigit() or int(raw) < 1:
        raise TopicTableError(f"{name}={raw!r} must be a whole number ≥ 1 (unset: the table's)")
    return int(raw)

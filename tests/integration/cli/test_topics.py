"""``vcbus topics`` on a real broker: every topic made as vcbus/core/runtime/topics.yaml says."""

from __future__ import annotations

import asyncio

import pytest
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

from vcbus.core.bus.broker import start_broker
from vcbus.core.bus.kafka import AioKafkaBus
from vcbus.core.bus.kafka_settings import KafkaSettings
from vcbus.core.bus.records import TopicConfig
from vcbus.services.cli import main

pytestmark = pytest.mark.integration


async def described(bootstrap: str, topics: list[str]) -> dict[str, tuple[int, dict[str, str]]]:
    """Each topic's replica count (of partition 0) and its configs, as the broker says."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        await admin.start()
        layout = {
            t["topic"]: len(t["partitions"][0]["replicas"])
            for t in await admin.describe_topics(topics)
        }
        responses = await admin.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, name) for name in topics]
        )
    finally:
        await admin.close()
    configs = {
        resource[3]: {entry[0]: entry[1] for entry in resource[4]}
        for response in responses
        for resource in response.resources
    }
    return {name: (layout[name], configs[name]) for name in topics}


def test_vcbus_topics_creates_every_topic_with_its_copies_and_configs(
    kafka_bootstrap, topic_prefix, monkeypatch, capsys
):
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", kafka_bootstrap)
    monkeypatch.setenv("VCBUS_TOPIC_PREFIX", topic_prefix)
    monkeypatch.setenv("VCBUS_REPLICATION_FACTOR", "1")  # any broker: one may be all there is
    monkeypatch.setenv("VCBUS_MIN_INSYNC_REPLICAS", "1")
    assert main(["topics"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith("topic table: ")
    assert printed[0].endswith("vcbus/core/runtime/topics.yaml")
    assert f"{topic_prefix}queues  partitions=4  replication-factor=1  " in "\n".join(printed)
    names = ["queues", "pods", "jobs.submitted", "job-controller.jobs.changelog", "allocator.lease"]
    found = asyncio.run(described(kafka_bootstrap, [f"{topic_prefix}{n}" for n in names]))
    copies = {name: found[f"{topic_prefix}{name}"][0] for name in names}
    configs = {name: found[f"{topic_prefix}{name}"][1] for name in names}
    assert set(copies.values()) == {1}
    assert configs["queues"]["cleanup.policy"] == "compact"
    assert configs["job-controller.jobs.changelog"]["cleanup.policy"] == "compact"
    assert configs["pods"]["retention.ms"] == "-1"
    assert configs["jobs.submitted"]["retention.ms"] == "604800000"
    assert all(c["min.insync.replicas"] == "1" for c in configs.values())
    # topics that exist are left as they are: a second run changes nothing and succeeds
    assert main(["topics"]) == 0


def test_the_embedded_broker_takes_the_tables_defaults_for_three_brokers(monkeypatch, capsys):
    """`vcbus up` and the tests run on the embedded broker with the table as it is."""
    broker = start_broker()
    try:
        monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", broker.bootstrap_servers)
        monkeypatch.setenv("VCBUS_TOPIC_PREFIX", "defaults.")
        monkeypatch.delenv("VCBUS_REPLICATION_FACTOR", raising=False)
        monkeypatch.delenv("VCBUS_MIN_INSYNC_REPLICAS", raising=False)
        assert main(["topics"]) == 0
        assert "defaults.queues  partitions=4  replication-factor=3  " in capsys.readouterr().out
        found = asyncio.run(described(broker.bootstrap_servers, ["defaults.queues"]))
        assert found["defaults.queues"][1]["min.insync.replicas"] == "2"
        # a write acknowledged by every in-sync replica (acks=all) goes through
        assert main(["queue", "create", "research"]) == 0
    finally:
        broker.stop()


def test_topics_made_before_the_table_are_named_with_each_difference(
    kafka_bootstrap, topic_prefix, monkeypatch, capsys
):
    """An installation made before the table: `queues` deleted after 7 days, one copy."""
    old = AioKafkaBus(KafkaSettings(bootstrap_servers=kafka_bootstrap))
    queues = f"{topic_prefix}queues"
    asyncio.run(old.ensure_topics([TopicConfig(queues, 4, 1, {"retention.ms": "604800000"})]))
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", kafka_bootstrap)
    monkeypatch.setenv("VCBUS_TOPIC_PREFIX", topic_prefix)
    monkeypatch.setenv("VCBUS_REPLICATION_FACTOR", "1")
    monkeypatch.setenv("VCBUS_MIN_INSYNC_REPLICAS", "1")
    assert main(["topics"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0] == (
        f"{queues} differs from the table: cleanup.policy=(unset) (table: compact); "
        "min.insync.replicas=(unset) (table: 1)"
    )
    assert err[1].startswith("topics that exist are left as they are: ")
    assert len(err) == 2  # every other topic was made by the table
    found = asyncio.run(old.existing_topics([queues]))
    assert found[queues].configs.get("retention.ms") == "604800000"  # left as it was

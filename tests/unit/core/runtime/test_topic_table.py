"""The topic table (topics.yaml): read, set for the cluster, refused when unusable."""

from __future__ import annotations

from pathlib import Path

import pytest

from vcbus.contracts import Topic
from vcbus.core.bus.records import TopicConfig
from vcbus.core.runtime.service import Service
from vcbus.core.runtime.settings import Settings
from vcbus.core.runtime.table import Table
from vcbus.core.runtime.topic_table import (
    SHIPPED_TABLE,
    TopicPolicy,
    TopicTableError,
    load_topic_table,
    parse_topic_table,
    table_path,
    topic_table,
)
from vcbus.core.runtime.topology import drift, service_topics, topic_configs
from vcbus.core.state.changelog import ChangelogStore

ENV = {"KAFKA_BOOTSTRAP_SERVERS": "unused"}


def table(text: str, tmp_path: Path) -> Path:
    path = tmp_path / "topics.yaml"
    path.write_text(text)
    return path


def test_each_topic_gets_its_configs_over_the_defaults() -> None:
    parsed = parse_topic_table(
        {
            "defaults": {"replicationFactor": 3, "config": {"min.insync.replicas": 2}},
            "topics": [
                {"name": "queues", "config": {"cleanup.policy": "compact"}},
                {"name": "jobs.submitted", "replicationFactor": 2, "config": {"retention.ms": 1}},
            ],
        },
        "t.yaml",
    )
    assert parsed.policy("queues") == TopicPolicy(
        3, {"min.insync.replicas": "2", "cleanup.policy": "compact"}
    )
    assert parsed.policy("jobs.submitted") == TopicPolicy(
        2, {"min.insync.replicas": "2", "retention.ms": "1"}
    )
    assert parsed.policy("not.listed") == parsed.default


def test_kept_means_compacted_or_never_deleted_by_time_or_size() -> None:
    assert TopicPolicy(1, {"cleanup.policy": "compact"}).kept
    assert TopicPolicy(1, {"retention.ms": "-1"}).kept
    assert not TopicPolicy(1, {"retention.ms": "-1", "retention.bytes": "1000"}).kept
    assert not TopicPolicy(1, {"cleanup.policy": "compact,delete"}).kept
    assert not TopicPolicy(1, {}).kept  # the broker's default retention (7 days)


@pytest.mark.parametrize(
    ("document", "says"),
    [
        ([], "must be a mapping"),
        ({"topics": [{"name": "a", "partitions": 4}]}, "topics[0]: unknown field(s) partitions"),
        ({"topics": [{"config": {}}]}, "topics[0] has no name"),
        ({"topics": [{"name": "a"}, {"name": "a"}]}, "topic a is listed twice"),
        ({"defaults": {"replicationFactor": 0}}, "replicationFactor must be a whole number ≥ 1"),
        ({"defaults": {"replicationFactor": True}}, "replicationFactor must be a whole number"),
        (
            {"topics": [{"name": "a", "config": {"cleanup.policy": "forever"}}]},
            "a: cleanup.policy 'forever' is not one of",
        ),
        (
            {"topics": [{"name": "a", "config": {"retention.ms": "7d"}}]},
            "a: retention.ms '7d' must be a whole number ≥ -1",
        ),
        (
            {"topics": [{"name": "a", "config": {"retention.ms": ["1"]}}]},
            "config 'retention.ms' must be a name and a plain value",
        ),
        (
            {"defaults": {"replicationFactor": 2, "config": {"min.insync.replicas": 3}}},
            "min.insync.replicas 3 is more than the replication factor 2",
        ),
    ],
)
def test_a_table_that_cannot_be_used_is_refused_saying_where_and_why(document, says) -> None:
    with pytest.raises(TopicTableError, match=r"^t\.yaml") as caught:
        parse_topic_table(document, "t.yaml")
    assert says in str(caught.value)


def test_a_missing_or_broken_file_is_refused_with_the_fix(tmp_path: Path) -> None:
    with pytest.raises(TopicTableError, match=r"cannot read it .*set VCBUS_TOPICS_FILE"):
        load_topic_table(tmp_path / "absent.yaml")
    with pytest.raises(TopicTableError, match="not YAML"):
        load_topic_table(table("topics: [", tmp_path))


def test_the_file_is_vcbus_topics_file_else_the_one_shipped_in_the_package(tmp_path: Path) -> None:
    assert table_path({}) == SHIPPED_TABLE
    assert SHIPPED_TABLE.is_file()
    assert Settings.from_env(ENV).topics.source == str(SHIPPED_TABLE)
    path = table("topics: [{name: queues, config: {cleanup.policy: compact}}]\n", tmp_path)
    settings = Settings.from_env({**ENV, "VCBUS_TOPICS_FILE": str(path)})
    assert settings.topics.source == str(path)
    assert settings.topics.policy("queues").configs == {"cleanup.policy": "compact"}


def test_the_cluster_overrides_set_every_topics_copies_and_in_sync_replicas() -> None:
    one = topic_table({"VCBUS_REPLICATION_FACTOR": "1", "VCBUS_MIN_INSYNC_REPLICAS": "1"})
    for policy in (one.default, *one.topics.values()):
        assert policy.replication_factor == 1
        assert policy.configs["min.insync.replicas"] == "1"
    assert one.policy("queues").configs["cleanup.policy"] == "compact"
    with pytest.raises(TopicTableError, match="more than the replication factor 1"):
        topic_table({"VCBUS_REPLICATION_FACTOR": "1"})
    with pytest.raises(TopicTableError, match="VCBUS_REPLICATION_FACTOR='three'"):
        topic_table({"VCBUS_REPLICATION_FACTOR": "three"})


def service(tables: list[str], stores: int = 0) -> Service:
    return Service(
        name="svc",
        routes=[],
        stores=[ChangelogStore(f"store{n}", dict) for n in range(stores)],
        tables=[Table("view", [Topic(t) for t in tables], lambda event, record: None)]
        if tables
        else [],
    )


def test_a_service_refuses_a_table_that_would_delete_what_its_view_is_rebuilt_from() -> None:
    shipped = topic_table({})
    assert service_topics(shipped, service(["queues", "pods"]), "p.", 4) == []
    lossy = parse_topic_table(
        {"topics": [{"name": "queues", "config": {"retention.ms": 604800000}}]}, "t.yaml"
    )
    with pytest.raises(TopicTableError, match="svc rebuilds its view from queues, which"):
        service_topics(lossy, service(["queues"]), "p.", 4)


def test_a_service_refuses_a_changelog_the_broker_would_delete_by_time() -> None:
    lossy = parse_topic_table({"topics": [{"name": "svc.store0.changelog"}]}, "t.yaml")
    with pytest.raises(TopicTableError, match=r"svc keeps its state in svc\.store0\.changelog"):
        service_topics(lossy, service([], stores=1), "p.", 4)
    with pytest.raises(TopicTableError, match=r"svc\.store0\.changelog, which the broker"):
        service_topics(topic_table({}), service([], stores=1), "p.", 4)  # not in the table
    compacted = parse_topic_table(
        {"topics": [{"name": "svc.store0.changelog", "config": {"cleanup.policy": "compact"}}]},
        "t.yaml",
    )
    made = service_topics(compacted, service([], stores=1), "p.", 4)
    assert [(t.name, t.partitions, dict(t.configs)) for t in made] == [
        ("p.svc.store0.changelog", 4, {"cleanup.policy": "compact"})
    ]


def test_topics_are_created_with_the_tables_copies_and_configs() -> None:
    configs = {c.name: c for c in topic_configs([], "p.", 4, topic_table({}))}
    assert configs["p.queues"].replication_factor == 3
    assert configs["p.queues"].configs == {"min.insync.replicas": "2", "cleanup.policy": "compact"}
    assert configs["p.pods"].configs["retention.ms"] == "-1"
    assert configs["p.jobs.submitted.DLT"].configs["retention.ms"] == "604800000"


def test_every_difference_from_the_table_is_named_when_a_topic_exists_otherwise() -> None:
    wanted = TopicConfig(
        "p.queues", 4, 3, {"cleanup.policy": "compact", "min.insync.replicas": "2"}
    )
    assert drift(wanted, wanted) == []
    found = TopicConfig("p.queues", 3, 1, {"cleanup.policy": "delete", "retention.ms": "604800000"})
    assert drift(wanted, found) == [
        "partitions=3 (table: 4)",
        "replication-factor=1 (table: 3)",
        "cleanup.policy=delete (table: compact)",
        "min.insync.replicas=(unset) (table: 2)",
    ]

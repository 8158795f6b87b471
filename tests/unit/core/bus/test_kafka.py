"""The Kafka bus's reading of broker answers, without a broker: a refused topic is named."""

from __future__ import annotations

from aiokafka.protocol.admin import CreateTopicsResponse_v3

from vcbus.core.bus.kafka_connect import refusals


def test_each_refused_topic_is_named_with_the_brokers_answer_when_creation_fails() -> None:
    response = CreateTopicsResponse_v3(
        throttle_time_ms=0,
        topic_errors=[
            ("p.queues", 38, "Replication factor: 3 larger than available brokers: 1."),
            ("p.pods", 36, "Topic 'p.pods' already exists."),
            ("p.nodes", 0, None),
            ("p.bindings", 40, None),
        ],
    )
    assert refusals(response) == [
        "p.queues: INVALID_REPLICATION_FACTOR (Replication factor: 3 larger than available "
        "brokers: 1.)",
        "p.bindings: INVALID_CONFIG (Configuration is invalid.)",
    ]

"""Fixtures of the service tests: the Kafka bus and settings under the test's own prefix."""

from __future__ import annotations

import pytest

from vcbus.core.bus.kafka import AioKafkaBus
from vcbus.core.bus.kafka_settings import KafkaSettings
from vcbus.core.runtime.settings import Settings

PARTITIONS = 4


@pytest.fixture
def bus(kafka_bootstrap: str) -> AioKafkaBus:
    """The bus on the session's broker."""
    return AioKafkaBus(KafkaSettings(bootstrap_servers=kafka_bootstrap))


@pytest.fixture
def settings(kafka_bootstrap: str, topic_prefix: str) -> Settings:
    """Settings of in-process services: the test's prefix, four partitions, short polls."""
    return Settings(
        kafka=KafkaSettings(bootstrap_servers=kafka_bootstrap),
        topic_prefix=topic_prefix,
        partitions=PARTITIONS,
        poll_timeout=0.1,
    )

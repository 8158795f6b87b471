"""The bus contract on a real Kafka-protocol broker."""

from __future__ import annotations

import pytest

from tests.support.broker import session_ms
from tests.support.bus_contract import BusContract
from vcbus.core.bus.kafka import AioKafkaBus
from vcbus.core.bus.kafka_settings import KafkaSettings
from vcbus.core.runtime.settings import Settings


class TestAioKafkaBus(BusContract):
    @pytest.fixture
    def bus(self, kafka_bootstrap: str) -> AioKafkaBus:
        return AioKafkaBus(
            KafkaSettings(bootstrap_servers=kafka_bootstrap, session_timeout_ms=session_ms())
        )

    @pytest.fixture
    def settings(self, kafka_bootstrap: str, topic_prefix: str) -> Settings:
        return Settings(
            kafka=KafkaSettings(bootstrap_servers=kafka_bootstrap, session_timeout_ms=session_ms()),
            topic_prefix=topic_prefix,
            poll_timeout=0.1,
            partitions=3,
        )

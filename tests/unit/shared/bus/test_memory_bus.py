"""The bus contract on the in-memory bus."""

from __future__ import annotations

import pytest

from shared.bus.kafka_settings import KafkaSettings
from shared.bus.memory import InMemoryBus
from shared.runtime.settings import Settings
from tests.support.bus_contract import BusContract


class TestInMemoryBus(BusContract):
    @pytest.fixture
    def bus(self) -> InMemoryBus:
        return InMemoryBus()

    @pytest.fixture
    def settings(self, topic_prefix: str) -> Settings:
        return Settings(
            kafka=KafkaSettings(bootstrap_servers="memory"),
            topic_prefix=topic_prefix,
            poll_timeout=0.05,
        )

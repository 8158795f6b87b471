"""The bus contract on the in-memory bus."""

from __future__ import annotations

import pytest

from tests.support.bus_contract import BusContract
from vcbus.shared.bus.kafka_settings import KafkaSettings
from vcbus.shared.bus.memory import InMemoryBus
from vcbus.shared.runtime.settings import Settings


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

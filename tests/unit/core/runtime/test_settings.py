"""Numeric settings are read from the environment and refused, by name, when unusable."""

from __future__ import annotations

import pytest

from vcbus.core.runtime.settings import Settings, SettingsError

BASE = {"KAFKA_BOOTSTRAP_SERVERS": "localhost:9092"}


def test_the_cycle_rest_defaults_to_two_and_is_read_from_the_environment():
    assert Settings.from_env(BASE).cycle_rest == 2.0
    assert Settings.from_env({**BASE, "VCBUS_CYCLE_REST": "2.5"}).cycle_rest == 2.5


@pytest.mark.parametrize("value", ["-1", "nan", "inf", "fast"])
def test_an_unusable_cycle_rest_is_refused_naming_the_variable(value):
    with pytest.raises(SettingsError, match="VCBUS_CYCLE_REST"):
        Settings.from_env({**BASE, "VCBUS_CYCLE_REST": value})

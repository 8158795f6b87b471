"""``vcbus serve``'s health server settings: ``VCBUS_HEALTH_PORT`` and ``VCBUS_HEALTH_HOST``."""

from __future__ import annotations

import pytest

from vcbus.core.runtime.settings import SettingsError
from vcbus.services.cli.serve import HealthOptions, health_options


def test_health_server_listens_on_8080_of_every_interface_when_nothing_is_set():
    assert health_options({}) == HealthOptions(host="0.0.0.0", port=8080)


def test_health_server_is_off_when_the_port_is_zero():
    assert health_options({"VCBUS_HEALTH_PORT": "0"}) is None


def test_health_server_takes_the_given_address_when_set():
    env = {"VCBUS_HEALTH_PORT": "9100", "VCBUS_HEALTH_HOST": "127.0.0.1"}
    assert health_options(env) == HealthOptions(host="127.0.0.1", port=9100)


@pytest.mark.parametrize("raw", ["http", "70000", "-1"])
def test_settings_error_says_how_to_fix_when_the_port_is_bad(raw):
    with pytest.raises(SettingsError, match="VCBUS_HEALTH_PORT"):
        health_options({"VCBUS_HEALTH_PORT": raw})

"""The node liveness rule (docs/design.md#real-nodes): grace period, eviction timeout, simulated
nodes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from vcbus.core.node_lifecycle import (
    NodeLifecycleConf,
    Readiness,
    heartbeat_age,
    is_lost,
    readiness,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)
CONF = NodeLifecycleConf(grace_seconds=40, eviction_seconds=300)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def test_defaults_are_kubernetes_grace_period_and_pod_eviction_timeout() -> None:
    assert (NodeLifecycleConf().grace_seconds, NodeLifecycleConf().eviction_seconds) == (40, 300)


def test_a_node_that_never_heartbeat_is_ready_and_never_lost() -> None:
    assert readiness(None, at(10**6), CONF) is Readiness.READY
    assert not is_lost(None, at(10**6), CONF)


@pytest.mark.parametrize(
    ("now", "expected"),
    [
        (0, Readiness.READY),
        (39.9, Readiness.READY),
        (40, Readiness.NOT_READY),
        (500, Readiness.NOT_READY),
    ],
)
def test_a_node_is_not_ready_once_the_grace_period_has_passed(
    now: float, expected: Readiness
) -> None:
    assert readiness(at(0), at(now), CONF) is expected


@pytest.mark.parametrize(("now", "expected"), [(40, False), (339.9, False), (340, True)])
def test_pods_are_lost_once_not_ready_for_the_eviction_timeout(now: float, expected: bool) -> None:
    assert is_lost(at(0), at(now), CONF) is expected


def test_a_node_that_heartbeats_again_is_ready_again() -> None:
    assert readiness(at(0), at(100), CONF) is Readiness.NOT_READY
    assert readiness(at(99), at(100), CONF) is Readiness.READY


def test_limits_are_read_from_the_settings_environment() -> None:
    conf = NodeLifecycleConf.from_env(
        {"VCBUS_NODE_MONITOR_GRACE_SECONDS": "2", "VCBUS_POD_EVICTION_TIMEOUT_SECONDS": "0.5"}
    )

    assert (conf.grace_seconds, conf.eviction_seconds) == (2, 0.5)


@pytest.mark.parametrize("value", ["0", "-1", "nan", "soon"])
def test_a_limit_that_is_not_a_positive_number_is_refused_naming_its_variable(value: str) -> None:
    with pytest.raises(ValueError, match="VCBUS_POD_EVICTION_TIMEOUT_SECONDS"):
        NodeLifecycleConf.from_env({"VCBUS_POD_EVICTION_TIMEOUT_SECONDS": value})


def test_heartbeat_age_is_never_negative_when_clocks_drift() -> None:
    assert heartbeat_age(at(5), at(12)) == 7
    assert heartbeat_age(at(5), at(4)) == 0

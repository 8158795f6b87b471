"""The status view ``vcbus up`` prints: nodes, their health, who locked them, until when."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tests.unit.services.cli.builders import NOW, build_node, elected, heartbeat, locked
from vcbus.core.node_lifecycle import NodeLifecycleConf, reader_conf
from vcbus.core.views.live import StatusView, nodes_table

DEFAULTS = NodeLifecycleConf()

UNTIL = datetime(2026, 1, 1, 0, 10, tzinfo=UTC)


def test_nodes_table_shows_the_lock_holder_and_its_end_when_a_node_is_locked() -> None:
    view = StatusView()
    for event in (
        build_node("n1"),
        build_node("n2"),
        elected("default/big", 1, until=UNTIL),
        locked("default/big", ("n2",), 1, until=UNTIL),
    ):
        view.apply(event)
    now = UNTIL - timedelta(minutes=4, seconds=12)
    rows = [line.split() for line in nodes_table(view, now=now, lifecycle=DEFAULTS).splitlines()]
    assert rows[0][-2:] == ["FOR", "EXPIRES"]
    assert rows[1][-2:] == ["-", "-"]
    assert rows[2][-3:] == ["default/big", "in", "4m12s"]
    passed = [
        line.split() for line in nodes_table(view, now=UNTIL, lifecycle=DEFAULTS).splitlines()
    ]
    assert passed[2][-2:] == ["default/big", "expired"]


def test_nodes_table_shows_a_real_nodes_status_heartbeat_age_and_unenforced_limits() -> None:
    view = StatusView()
    for event in (
        build_node("real"),
        heartbeat("real", 0, limits_enforced=False),
        build_node("sim"),
    ):
        view.apply(event)

    lines = nodes_table(view, now=NOW + timedelta(seconds=41), lifecycle=DEFAULTS).splitlines()

    assert lines[0].split()[:3] == ["NODE", "STATUS", "HEARTBEAT"]
    assert lines[1].split()[:6] == ["real", "NotReady", "(limits", "not", "enforced)", "41s"]
    assert lines[2].split()[:3] == ["sim", "Ready", "-"]


def test_vcbus_ups_nodes_count_not_ready_with_the_allocators_variable() -> None:
    """``vcbus up`` showed a node Ready that its allocator, given a grace of 2 s, had
    already taken as NotReady (the table counted with the default 40 s)."""
    view = StatusView()
    for event in (build_node("real"), heartbeat("real", 0)):
        view.apply(event)
    env = {"VCBUS_NODE_MONITOR_GRACE_SECONDS": "2"}
    lines = nodes_table(view, now=NOW + timedelta(seconds=5), lifecycle=reader_conf(env))
    assert lines.splitlines()[1].split()[:2] == ["real", "NotReady"]
    assert reader_conf({"VCBUS_NODE_MONITOR_GRACE_SECONDS": "soon"}) == DEFAULTS

"""The status view ``vcbus up`` prints: nodes with who locked them and until when."""

from __future__ import annotations

from datetime import UTC, datetime

from shared.views.status import StatusView, nodes_table
from tests.unit.services.cli.builders import build_node, elected, locked

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
    rows = [line.split() for line in nodes_table(view).splitlines()]
    assert rows[0][-2:] == ["FOR", "UNTIL"]
    assert rows[1][-2:] == ["-", "-"]
    assert rows[2][-2:] == ["default/big", "2026-01-01T00:10:00+00:00"]

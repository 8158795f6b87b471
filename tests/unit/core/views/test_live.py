"""``vcbus up``'s live view, folded from decoded events, and the one table renderer."""

from __future__ import annotations

from tests.unit.services.cli.builders import NOW, build_phase, build_podgroup, build_status
from vcbus.contracts import JobKey, PodGroupDeleted
from vcbus.contracts.objects import PodGroupPhase
from vcbus.core.printable import cell
from vcbus.core.views.live import StatusView, jobs_table
from vcbus.core.views.table import format_row, render_table, widths_of


def deleted() -> PodGroupDeleted:
    return PodGroupDeleted(event_id="d", occurred_at=NOW, job=JobKey("default/a"), name="a-pg")


def test_a_completed_job_whose_podgroup_is_gone_shows_it_deleted_and_its_own_reason():
    view = StatusView()
    for event in (
        build_podgroup("default/a"),
        build_phase("default/a", PodGroupPhase.RUNNING),
        build_status("default/a", "Completed", reason="Completed", message="done"),
        deleted(),
    ):
        view.apply(event)
    job = view.jobs["default/a"]
    assert (job.phase, job.podgroup_phase) == ("Completed", "Deleted")
    assert view.reason("default/a") == "Completed: done"
    assert "Running" not in jobs_table(view)
    assert view.all_final(["default/a"])


def test_a_waiting_job_says_its_highest_ranked_reason():
    view = StatusView()
    view.apply(build_status("default/a", "Pending", reason="PodGroupPending"))
    view.apply(build_phase("default/a", PodGroupPhase.PENDING, reason="QueueClosed", message="q"))
    assert view.reason("default/a") == "QueueClosed: q"
    assert not view.all_final(["default/a"])


def test_tables_escape_cells_and_align_columns():
    lines = render_table(("A", "B"), [("x\ny", "1"), ("long", "22")], gap=2)
    escaped = cell("x\ny")
    assert "\n" not in escaped
    width = max(len(escaped), 4)
    assert lines == [
        "A".ljust(width) + "  B",
        escaped.ljust(width) + "  1",
        "long".ljust(width) + "  22",
    ]
    widths = widths_of(("A",), [("abc",)])
    assert format_row(("ok",), widths, paint=lambda p, raw: f"<{raw}>{p}", paint_at=0) == "<ok>ok"

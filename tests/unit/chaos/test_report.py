"""What a run leaves beside its figures: the whole history of each job that did not finish."""

from __future__ import annotations

import json
from pathlib import Path

from tests.chaos.load import Hogs
from tests.chaos.run import Report, render, write_report


def test_each_unfinished_jobs_history_is_written_beside_the_figures(tmp_path: Path) -> None:
    records = [
        {"topic": "jobs.admitted", "partition": 1, "offset": 4, "key": "chaos/a", "value": {}},
        {"topic": "pods.status", "partition": 1, "offset": 9, "key": "chaos/a", "value": {}},
    ]
    report = Report(config={"load": 0.75}, started="2026-11-27T10:00:00+00:00")
    report.histories = {"chaos/a": records}

    figures = write_report(report, tmp_path)

    written = tmp_path / "chaos-20261127T100000.history" / "chaos_a.jsonl"
    assert [json.loads(line) for line in written.read_text().splitlines()] == records
    assert json.loads(figures.read_text())["histories"] == ["chaos/a"]
    assert "histories       1 jobs" in render(report)


def test_hogs_run_until_stopped() -> None:
    hogs = Hogs(0.1, count=2)
    hogs.start()
    running = [process.poll() for process in hogs._processes]
    hogs.stop()

    assert running == [None, None]
    assert hogs._processes == []

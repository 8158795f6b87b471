"""The dashboard app's charts and deleted jobs over an in-memory bus, as a browser gets them."""

from __future__ import annotations

import pytest

from tests.unit.services.cli.builders import publish
from tests.unit.services.cli.test_dashboard_app import dashboard, waiting_job
from vcbus.contracts import JobDeleted, JobKey
from vcbus.core.runtime.clock import SystemClock


async def test_the_overview_charts_samples_and_a_deleted_job_keeps_its_page(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("VCBUS_DASHBOARD_SAMPLE_SECONDS", "0.1")
    monkeypatch.setenv("VCBUS_DASHBOARD_HISTORY_SECONDS", "soon")
    async with dashboard() as app:
        await waiting_job(app.bus)
        overview = await app.page_with("/", 'data-series="QueueClosed"')
        odd = await app.request("GET", "/jobs?page=abc&sort=%3Cx%3E&order=up")
        await publish(
            app.bus,
            JobDeleted(event_id="del", occurred_at=SystemClock().now(), job=JobKey("team/b")),
        )
        gone = await app.page_with("/jobs/team/b", "Last phase")
        listing = await app.page("/jobs")

    assert 'data-series="cpu"' in overview
    assert 'data-series="default deserved"' in overview
    assert odd.status == 200
    assert "Deleted" in gone
    assert "Deleted recently (1)" in listing
    assert "team/b" not in listing.split('class="jobs"')[1].split("</table>")[0]
    # a bad setting is said and the default used: the deleted job is still kept
    assert "VCBUS_DASHBOARD_HISTORY_SECONDS='soon'" in capsys.readouterr().err

"""The dashboard's pages laid out by a real headless Chromium at 1400 px: nothing leaves its card.

The pages are rendered by the dashboard's own page functions, with the dashboard's own
stylesheet, from queue rows as wide as a real cluster's (several resources, long amounts,
every PodGroup phase); the test measures each table against the card (``section``) it is in.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.chromium import Browser, ensure_chromium
from vcbus.services.cli.dashboard.assets import CSS
from vcbus.services.cli.dashboard.pages import overview_page, queues_page
from vcbus.services.cli.dashboard.views import Bar, Overview, QueueView

pytestmark = pytest.mark.slow

WIDTH = 1400


@pytest.fixture(scope="module")
def chromium() -> str:
    path, why = ensure_chromium()
    if path is None:
        pytest.skip(f"no headless Chromium for the layout test: {why}")
    return path


def _queue(name: str) -> QueueView:
    return QueueView(
        name=name,
        weight=1,
        share=33,
        state="Open",
        parent="root",
        allocated=(
            Bar("cpu", 61_500, 64_000, "61.5 / 64 cores"),
            Bar("memory", 270, 279, "270.00Gi / 279.04Gi"),
        ),
        capability="cpu 64, memory 279.04Gi, nvidia.com/gpu 8, pods 110",
        podgroups=(("Inqueue", 12), ("Pending", 340), ("Running", 1024), ("Completed", 9870)),
    )


QUEUES = (_queue("default"), _queue("research-long-queue-name"), _queue("batch"))


def _overflows(browser: Browser, page: str, path: Path) -> list[object]:
    """Each table wider than its card: ``[card right, table right, table class]``."""
    path.write_text(
        page.replace(
            '<link rel="stylesheet" href="/static/dashboard.css">', f"<style>{CSS}</style>"
        )
    )
    browser.open(path.as_uri())
    found = browser.evaluate(
        "[...document.querySelectorAll('section table, main > table')].map(t => {"
        " const card = t.closest('section') || t.parentElement;"
        " const box = card.getBoundingClientRect();"
        " const inner = box.right - parseFloat(getComputedStyle(card).paddingRight);"
        " return [Math.round(inner), Math.round(t.getBoundingClientRect().right), t.className];"
        "}).filter(([inner, right]) => right > inner + 1)"
    )
    assert isinstance(found, list)
    bars = browser.evaluate(
        "[...document.querySelectorAll('table.queues .meter .bar')]"
        ".map(b => b.getBoundingClientRect().width)"
    )
    assert bars
    assert all(width >= 60 for width in bars), bars  # still bars, not slivers
    return found


def test_the_queue_table_fits_its_card_at_1400_px(chromium: str, tmp_path: Path) -> None:
    overview = Overview(
        nodes=3,
        resources=(Bar("cpu", 1, 2, "1 / 2 cores"),),
        jobs=10,
        phases=(("Running", 10),),
        queues=QUEUES,
        target="",
        locked=(),
    )
    with Browser(chromium, tmp_path / "profile", width=WIDTH, height=900) as browser:
        assert browser.evaluate("window.innerWidth") == WIDTH
        assert _overflows(browser, queues_page(QUEUES, token="t"), tmp_path / "queues.html") == []
        assert _overflows(browser, overview_page(overview), tmp_path / "overview.html") == []

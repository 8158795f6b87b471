"""The README is a user's front page: short, and every page it sends the reader to exists."""

from __future__ import annotations

import re

from tests.conftest import ROOT

MAX_LINES = 250
"""What a newcomer reads through; figures and their history live in docs/performance.md."""


def test_the_readme_is_a_front_page() -> None:
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= MAX_LINES, f"{len(lines)} lines: move detail to a page of docs/"


def test_every_page_the_readme_links_exists() -> None:
    text = (ROOT / "README.md").read_text()
    targets = re.findall(r"\]\(((?!https?://)[^)#]+)(?:#[^)]*)?\)", text)
    assert targets
    assert [t for t in targets if not (ROOT / t).exists()] == []

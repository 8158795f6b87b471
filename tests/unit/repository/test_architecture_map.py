"""docs/architecture.md's topic diagram draws the topics the code has, with their writers."""

from __future__ import annotations

import re

from tests.conftest import ROOT
from vcbus.contracts.topics import TOPICS, Topic

ROW = re.compile(r"^(?P<writers>\S.*?)\s+──▶ (?P<topic>[a-z.]+)\s+──▶ (?P<readers>.+)$")


def diagram() -> str:
    """The first code block of the page's "Stages and topics" section."""
    page = (ROOT / "docs" / "architecture.md").read_text()
    section = page.split("\n## Stages and topics\n", 1)[1].split("\n## ", 1)[0]
    return section.split("```", 2)[1]


def rows(text: str) -> dict[str, tuple[set[str], str]]:
    """Topic → (its writers, its readers as written), from the diagram's writer table."""
    out: dict[str, tuple[set[str], str]] = {}
    for line in text.splitlines():
        if match := ROW.match(line):
            writers = {w.strip() for w in match["writers"].split(",")}
            out[match["topic"]] = (writers, match["readers"])
    return out


def test_the_diagram_names_every_topic_once_with_its_writers() -> None:
    drawn = rows(diagram())
    assert sorted(drawn) == sorted(str(topic) for topic in Topic)
    for spec in TOPICS:
        writers = {w.strip() for w in spec.writer.split(",")}
        assert writers <= drawn[spec.topic][0], (spec.topic, writers, drawn[spec.topic][0])


def test_the_diagram_draws_the_node_agent() -> None:
    text = diagram()
    assert re.search(r"\bagent\b", text.split("writer ", 1)[0]), "the flow of a job"
    readers_of = {topic: readers for topic, (_, readers) in rows(text).items()}
    assert "agent" in readers_of[Topic.BINDINGS]
    assert "agent" in rows(text)[Topic.NODES][0]


def test_rows_reads_a_diagram_line() -> None:
    """The parser the two tests above rely on: writers, topic and readers of one line."""
    line = "cluster, agent             ──▶ nodes                 ──▶ podgroup-enqueue, allocator"
    assert rows(line) == {"nodes": ({"cluster", "agent"}, "podgroup-enqueue, allocator")}
    assert rows("users ──▶ jobs.submitted\n") == {}

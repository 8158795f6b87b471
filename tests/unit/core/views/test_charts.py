"""The inline SVG charts: series and bars carry their values, names are escaped."""

from __future__ import annotations

import re
from html.parser import HTMLParser

from vcbus.core.views.charts import (
    MAX_BARS,
    MAX_POINTS,
    GanttBar,
    Series,
    ago_label,
    gantt,
    line_chart,
    percent_label,
    seconds_label,
)


class Elements(HTMLParser):
    """Every start tag with its attributes, in order."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.found: list[tuple[str, dict[str, str]]] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, {k: v or "" for k, v in attrs}))

    def all(self, tag: str, cls: str = "") -> list[dict[str, str]]:
        return [a for t, a in self.found if t == tag and (not cls or a.get("class") == cls)]


def test_a_line_chart_draws_each_series_with_its_values_and_a_legend() -> None:
    chart = line_chart(
        "Cluster utilisation",
        [Series("cpu", ((0, 0.0), (5, 0.5), (10, 1.0))), Series("goal", ((0, 0.25),), dashed=True)],
        y_format=percent_label,
        y_max=1.0,
    )
    lines = Elements(chart).all("polyline", "series")

    assert [line["data-series"] for line in lines] == ["cpu", "goal"]
    assert lines[0]["data-points"] == "0,0 5,0.5 10,1"
    assert "stroke-dasharray" in lines[1]
    assert "100%" in chart
    assert chart.count('class="swatch') == 2
    # steps: each point after the first is reached flat, then straight up
    assert len(lines[0]["points"].split()) == 5


def test_a_chart_without_samples_says_so() -> None:
    chart = line_chart("Pending jobs by reason", [])
    assert "no samples yet" in chart
    assert "<polyline" not in chart


def test_a_series_keeps_its_newest_points_only() -> None:
    points = tuple((float(i), 1.0) for i in range(MAX_POINTS + 50))
    line = Elements(line_chart("t", [Series("s", points)])).all("polyline", "series")[0]
    assert len(line["data-points"].split()) == MAX_POINTS
    assert line["data-points"].split()[0] == "50,1"


def test_gantt_draws_a_wait_and_a_run_bar_per_job_coloured_by_queue() -> None:
    bars = [
        GanttBar("default/a", "gold", 0, 2, 5),
        GanttBar("default/b", "gold", 1, None, None),
        GanttBar("default/c", "lead", 1, 3, None),
    ]
    page = Elements(gantt("Jobs", bars, end=10))
    waits, runs = page.all("rect", "wait"), page.all("rect", "run")

    assert [(r["data-job"], r["data-from"], r["data-to"]) for r in waits] == [
        ("default/a", "0", "2"),
        ("default/b", "1", "10"),
        ("default/c", "1", "3"),
    ]
    assert [(r["data-job"], r["data-from"], r["data-to"]) for r in runs] == [
        ("default/a", "2", "5"),
        ("default/c", "3", "10"),
    ]
    assert runs[0]["fill"] != runs[1]["fill"]
    assert waits[0]["fill"] == waits[1]["fill"] == runs[0]["fill"]


def test_gantt_bounds_its_rows_and_counts_the_rest() -> None:
    bars = [GanttBar(f"default/j{i}", "q", i, i + 1, i + 2) for i in range(MAX_BARS + 3)]
    chart = gantt("Jobs", bars, end=MAX_BARS + 5)
    assert len(Elements(chart).all("rect", "run")) == MAX_BARS
    assert "3 more jobs not drawn" in chart


def test_names_are_escaped() -> None:
    evil = '<script>alert("x")</script>'
    chart = line_chart(evil, [Series(evil, ((0, 1),))]) + gantt(
        evil, [GanttBar(evil, evil, 0, 1, 2)], end=2
    )
    assert "<script>" not in chart
    assert "&lt;script&gt;" in chart


def test_axis_labels_read_as_durations() -> None:
    assert [seconds_label(v) for v in (0, 90, 900, 7200)] == ["0s", "90s", "15m", "2h"]
    assert [ago_label(v) for v in (0, -30, -600)] == ["now", "30s ago", "10m ago"]
    assert percent_label(0.255) == "25.5%"


def test_a_count_axis_has_whole_ticks() -> None:
    chart = line_chart(
        "Pending jobs by reason", [Series("Infeasible", ((0, 1), (5, 0)))], whole=True
    )
    ticks = re.findall(r'<text class="tick" x="48"[^>]*>([^<]+)</text>', chart)
    assert ticks == ["0", "1", "2", "3", "4"]

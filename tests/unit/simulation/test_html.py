"""``vcbus simulate --html``: the page's charts and Gantt hold the run's own figures."""

from __future__ import annotations

import argparse
import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from vcbus.services.cli import simulate
from vcbus.services.simulation.html import Cluster, cluster_of, render_html
from vcbus.services.simulation.run import simulate_document
from vcbus.services.simulation.scenario import parse_scenario

NODE = {"name": "n1", "allocatable": {"cpu": "4", "memory": "8Gi", "pods": 110}}


def job(name: str, queue: str, *, replicas: int = 2, seconds: int = 10) -> dict[str, Any]:
    template = {
        "metadata": {"annotations": {"vcbus.io/run-seconds": str(seconds)}},
        "spec": {
            "containers": [
                {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}
            ]
        },
    }
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "queue": queue,
            "minAvailable": replicas,
            "tasks": [{"name": "main", "replicas": replicas, "template": template}],
        },
    }


# Two queues of weight 1 and 3 on one 4-cpu node; three 2-pod jobs: a and b fill the node
# at 0 s, c waits until they end at 10 s and runs to 20 s.
SCENARIO: dict[str, Any] = {
    "queues": [{"name": "gold", "weight": 3}, {"name": "lead", "weight": 1}],
    "nodes": [NODE],
    "jobs": [
        {"at": 0, "job": job("a", "gold")},
        {"at": 0, "job": job("b", "lead")},
        {"at": 1, "job": job("c", "gold")},
    ],
}


class Elements(HTMLParser):
    """Every start tag with its attributes, and the figure captions' text."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.found: list[tuple[str, dict[str, str]]] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, {k: v or "" for k, v in attrs}))

    def all(self, tag: str, cls: str = "", **wanted: str) -> list[dict[str, str]]:
        return [
            a
            for t, a in self.found
            if t == tag
            and (not cls or a.get("class") == cls)
            and all(a.get(k.replace("_", "-")) == v for k, v in wanted.items())
        ]

    def series(self, chart: str) -> dict[str, list[tuple[float, float]]]:
        """The series of the chart captioned ``chart``: name → points."""
        inside, out = False, {}
        for tag, attrs in self.found:
            if tag == "figure":
                inside = attrs.get("data-chart") == chart
            elif inside and tag == "polyline":
                out[attrs["data-series"]] = [
                    (float(x), float(y))
                    for x, y in (p.split(",") for p in attrs["data-points"].split())
                ]
        return out


def _value_at(points: list[tuple[float, float]], t: float) -> float:
    return [y for x, y in points if x <= t][-1]


def test_the_page_draws_utilisation_shares_pending_and_a_bar_per_job() -> None:
    report = simulate_document(SCENARIO)
    cluster = cluster_of(parse_scenario(SCENARIO))
    page = Elements(render_html(report, cluster, title="two queues"))
    times = {key: job["times"] for key, job in report["jobs"].items()}  # type: ignore[attr-defined]

    runs = page.all("rect", "run")
    assert sorted(r["data-job"] for r in runs) == ["default/a", "default/b", "default/c"]
    for bar in runs:
        assert float(bar["data-from"]) == times[bar["data-job"]]["running"]
        assert float(bar["data-to"]) == times[bar["data-job"]]["finished"]
    assert {r["data-job"]: r["data-queue"] for r in runs}["default/b"] == "lead"
    waited = page.all("rect", "wait", data_job="default/c")[0]
    assert float(waited["data-from"]) == times["default/c"]["submitted"] == 1
    assert float(waited["data-to"]) == times["default/c"]["running"] >= 10

    used = page.series("Cluster utilisation")
    assert set(used) == {"cpu", "memory"}
    assert _value_at(used["cpu"], 5) == 1.0
    assert _value_at(used["cpu"], times["default/c"]["running"] + 2) == 0.5

    shares = page.series("Queue share against deserved share (dashed)")
    assert set(shares) == {"gold", "gold deserved", "lead", "lead deserved"}
    assert shares["gold deserved"][0][1] == 0.75
    assert shares["lead deserved"][0][1] == 0.25
    assert _value_at(shares["lead"], 5) == 0.5

    pending = page.series("Pending jobs by reason")
    assert sum(_value_at(points, 5) for points in pending.values()) == 1
    assert (
        sum(_value_at(points, times["default/c"]["running"] + 2) for points in pending.values())
        == 0
    )


def test_a_page_of_a_run_with_no_jobs_still_renders() -> None:
    page = render_html(
        {"jobs": {}, "pods": {}, "timeline": [], "summary": {}}, Cluster({}, {}), title="<x>"
    )
    assert "&lt;x&gt;" in page
    assert "<x>" not in page
    assert page.count("no samples yet") == 2  # no queue held anything, no job waited


def test_cli_writes_the_page_beside_its_usual_output(tmp_path: Path, capsys) -> None:
    path, out = tmp_path / "s.json", tmp_path / "run.html"
    path.write_text(json.dumps(SCENARIO))
    parser = argparse.ArgumentParser()
    simulate.register(parser.add_subparsers())
    args = parser.parse_args(["simulate", str(path), "--html", str(out)])

    assert args.func(args) == 0

    assert "default/c" in capsys.readouterr().out
    page = out.read_text()
    assert page.startswith("<!doctype html>")
    assert "<script" not in page
    assert "http://" not in page.replace("http://www.w3.org/2000/svg", "")
    assert len(Elements(page).all("rect", "run")) == 3


def test_cli_refuses_html_for_a_snapshot_scenario(tmp_path: Path, capsys) -> None:
    path, out = tmp_path / "snap.json", tmp_path / "run.html"
    path.write_text(json.dumps({"nodes": [NODE], "podgroups": [], "pods": []}))
    parser = argparse.ArgumentParser()
    simulate.register(parser.add_subparsers())
    args = parser.parse_args(["simulate", str(path), "--html", str(out)])

    assert args.func(args) == 2

    assert "--html needs a full-mode scenario" in capsys.readouterr().err
    assert not out.exists()

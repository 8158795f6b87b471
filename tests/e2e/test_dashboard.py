"""The web dashboard in a real headless Chromium, against ``vcbus up`` on a real broker.

``vcbus up`` runs the five services on two 4-CPU nodes and the dashboard on a free port.
The browser opens the Jobs page first; jobs are then submitted with ``vcbus submit``: a
filler holding 3 CPUs of each node and, once it runs, a job annotated
``volcano.sh/target-job`` that needs two pods of 2 CPUs (so it cannot fit, is elected and
gets nodes locked for it), and one admission rejects. The jobs appear on the open page
without a reload (server-sent events), the target's page gives the reason ``vcbus get``
gives with ``describe``'s events and their relative ages, the Nodes page marks the locked
nodes with the target under a legend of its colours, the Overview's meters are drawn as wide
as their values (in cores and Gi) and its charts fill with samples, the Jobs list sorts by
age and searches, a deleted job's page shows its last state, and a page without JavaScript
shows the same rows. Screenshots are kept in the test's tmp dir (and copied to
the folder ``VCBUS_DASHBOARD_SCREENSHOTS`` when set: how docs/dashboard*.png are made).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.support.chromium import Browser, ensure_chromium
from tests.support.manifests import task_manifest
from tests.support.processes import ROOT, ServiceProcess, service_env
from vcbus.core.runtime.clock import SystemClock
from vcbus.core.runtime.settings import Settings
from vcbus.services.cli.submit import publish
from vcbus.services.submission import records_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]

FILLER = "dash-filler"
TARGET = "dash-target"
BROKEN = "dash-broken"


def _job(name: str, task: dict[str, object], **spec: object) -> dict[str, object]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "annotations": spec.pop("annotations", {})},
        "spec": {"queue": "default", "tasks": [task], **spec},
    }


LONG_RUN = {"vcbus.io/run-seconds": "900"}


def _filler() -> dict[str, object]:
    return _job(FILLER, task_manifest("busy", 2, cpu="3", memory="1Gi", annotations=LONG_RUN))


def _later() -> list[dict[str, object]]:
    long_run = LONG_RUN
    return [
        _job(
            TARGET,
            task_manifest("wide", 2, cpu="2", memory="1Gi", annotations=long_run),
            minAvailable=2,
            annotations={"volcano.sh/target-job": "true"},
        ),
    ]


def _broken() -> dict[str, object]:
    """A job admission rejects (minAvailable over its pods)."""
    return _job(
        BROKEN, task_manifest("w", 1, cpu="1", memory="1Gi", annotations={}), minAvailable=5
    )


def _publish(env: dict[str, str], document: dict[str, object]) -> None:
    """Publish a manifest as any Kafka client may (`vcbus submit` refuses what admission would)."""
    settings = Settings.from_env(env)
    items = records_for(yaml.safe_dump(document), settings.topic_prefix, SystemClock().now())
    asyncio.run(publish(settings, [item.record for item in items]))


@pytest.fixture(scope="module")
def chromium() -> str:
    path, why = ensure_chromium()
    if path is None:
        pytest.skip(f"no headless Chromium for the dashboard test: {why}")
    return path


@dataclass(frozen=True)
class Up:
    """``vcbus up`` running: the process, the dashboard's URL, the CLI's environment."""

    process: ServiceProcess
    url: str
    env: dict[str, str]


@pytest.fixture
def up(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Up]:
    """``vcbus up`` with the dashboard on a free port; its URL and environment."""
    logs = tmp_path_factory.mktemp("dashboard-logs")
    env = service_env(
        kafka_bootstrap, f"e2e-{os.getpid()}-dashboard.", VCBUS_DASHBOARD_SAMPLE_SECONDS="1"
    )
    args = ["up", "--dashboard-port", "0", "--nodes", "2", "--node-cpu", "4"]
    process = ServiceProcess("vcbus-up", "vcbus.services.cli", [*args, "--log-dir", str(logs)], env)
    process.start()
    try:
        line = process.wait_for(lambda line: str(line.get("text", "")).startswith("dashboard: "))
        yield Up(process, str(line["text"]).removeprefix("dashboard: "), env)
    finally:
        process.close()


def _vcbus(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "vcbus.services.cli", *args],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode in (0, 1), done.stdout + done.stderr
    return done.stdout


def _cli_reason(env: dict[str, str], name: str) -> str:
    items = json.loads(_vcbus(env, "get", "jobs", name, "-o", "json"))["items"]
    return str(items[0]["reason"]) if items else ""


def test_dashboard_shows_jobs_live_a_job_reason_and_locked_nodes(
    chromium: str, up: Up, tmp_path: Path
) -> None:
    process, url, env = up.process, up.url, up.env
    filler, later = tmp_path / "filler.yaml", tmp_path / "later.yaml"
    filler.write_text(yaml.safe_dump(_filler()))
    later.write_text(yaml.safe_dump_all(_later()))
    shots = tmp_path / "screenshots"
    shots.mkdir()

    with Browser(chromium, tmp_path / "profile") as browser:
        browser.open(f"{url}jobs")
        browser.wait_until(lambda: browser.text("#live") == "live", "the live badge")
        browser.evaluate("window.vcbusOpened = 'before submit'")

        def row(name: str) -> str:
            return str(
                browser.evaluate(
                    "([...document.querySelectorAll('table.jobs tbody tr')]"
                    f".find(r => r.innerText.includes('default/{name}')) || {{}}).innerText || ''"
                )
            )

        _vcbus(env, "submit", str(filler))
        browser.wait_until(lambda: "Running" in row(FILLER), "the filler Running on the open page")
        _vcbus(env, "submit", str(later))
        _publish(env, _broken())
        browser.wait_until(
            lambda: all(f"default/{n}" in browser.text() for n in (FILLER, TARGET, BROKEN)),
            "the submitted jobs on the open Jobs page",
        )
        assert browser.evaluate("window.vcbusOpened") == "before submit", "the page reloaded"
        browser.wait_until(lambda: "Rejected" in row(BROKEN), "the rejected job's phase")

        browser.evaluate(f"document.querySelector('a[href=\"/jobs/default/{TARGET}\"]').click()")
        browser.wait_until(
            lambda: (
                browser.evaluate("location.pathname") == f"/jobs/default/{TARGET}"
                and "Why it waits" in browser.text()
            ),
            "the target's page with its reason",
        )

        def same_reason_as_cli() -> bool:
            shown = browser.text(".why .reason")
            return bool(shown) and shown == _cli_reason(env, TARGET)

        browser.wait_until(same_reason_as_cli, "the reason vcbus get gives")
        events = browser.text("table.events")
        assert "Admitted" in events
        assert "admitted to queue default" in events
        assert " ago" in events
        assert ".v1" not in events
        assert "Queue position" in browser.text(".facts")
        assert "/trace/" in str(browser.evaluate("document.querySelector('a.trace').href"))
        browser.screenshot(shots / "job.png")

        browser.open(f"{url}nodes")
        browser.wait_until(
            lambda: browser.evaluate("document.querySelectorAll('.node.locked').length") >= 1,
            "a node marked locked",
        )
        locks = browser.evaluate(
            "[...document.querySelectorAll('.node.locked .lock')].map(e => e.innerText)"
        )
        assert locks
        assert all(text == f"locked for default/{TARGET}" for text in locks), locks
        assert "over 75 %" in browser.text(".node-legend")
        browser.screenshot(shots / "nodes.png")
        browser.open(url)
        browser.wait_until(lambda: f"default/{TARGET}" in browser.text(), "the reservation")
        browser.wait_until(
            lambda: (
                browser.evaluate("document.querySelectorAll('figure.chart polyline.series').length")
                >= 3
            ),
            "the charts with samples",
        )
        widths = browser.evaluate(
            "[...document.querySelectorAll('.meter')].map(m => [m.querySelector('.bar')"
            ".getBoundingClientRect().width, m.querySelector('.fill').getBoundingClientRect()"
            ".width, m.querySelector('.text').innerText])"
        )
        assert widths
        assert all(bar >= 60 for bar, _, _ in widths), widths
        cpu = [(bar, fill, said) for bar, fill, said in widths if "cores" in said]
        assert cpu
        assert all(fill > 0 for _, fill, _ in cpu), cpu  # the filler holds 6 of 8 cores
        assert not any(said.split(" / ")[0].endswith("m") for _, _, said in widths), widths
        browser.screenshot(shots / "overview.png")

        browser.open(f"{url}jobs?sort=age&order=desc")
        ages = browser.evaluate(
            "[...document.querySelectorAll('table.jobs tbody tr')].map(r => r.cells[0].innerText)"
        )
        assert ages[-1] == f"default/{FILLER}", ages  # the oldest last
        browser.screenshot(shots / "jobs.png")
        browser.evaluate(
            "document.querySelector('input[name=q]').value = 'broken';"
            "document.querySelector('form.filters').submit()"
        )
        browser.wait_until(
            lambda: browser.evaluate("location.search").startswith("?namespace="),
            "the search submitted",
        )
        assert f"default/{BROKEN}" in browser.text("table.jobs")
        assert f"default/{FILLER}" not in browser.text("table.jobs")

        _vcbus(env, "delete", "job", FILLER, "--wait", "--timeout", "60")
        browser.open(f"{url}jobs/default/{FILLER}")
        browser.wait_until(lambda: "Last phase" in browser.text(), "the deleted job's page")
        assert "Running" in browser.text(".facts")
        assert "Deleted" in browser.text("table.events")

        browser.call("Emulation.setScriptExecutionDisabled", value=True)
        browser.open(f"{url}jobs?phase=Rejected")
        static = browser.text("table.jobs")
        assert f"default/{BROKEN}" in static
        assert f"default/{FILLER}" not in static
        assert browser.text("#live") == "static"

    for shot in shots.iterdir():
        assert shot.read_bytes().startswith(b"\x89PNG\r\n\x1a\n"), shot
    keep = os.environ.get("VCBUS_DASHBOARD_SCREENSHOTS")
    if keep:
        for shot in shots.iterdir():
            name = "dashboard.png" if shot.stem == "overview" else f"dashboard-{shot.name}"
            shutil.copyfile(shot, Path(keep) / name)

    assert process.terminate() == 0, process.tail()

"""``vcbus simulate`` refuses a file that is not a scenario, and a misspelt key, exit 2."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

from vcbus.services.cli import main

ROOT = Path(__file__).resolve().parents[3]


def simulate(path: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["simulate", str(path)])
    return status, out.getvalue(), err.getvalue()


def test_a_job_manifest_is_not_a_scenario(tmp_path: Path) -> None:
    job = ROOT / "examples" / "jobs" / "gang.yaml"
    assert simulate(job) == (
        2,
        "",
        f"vcbus simulate: {job} is not a scenario (it is a Job: `vcbus submit` publishes one): "
        "a scenario has nodes and jobs, or nodes, podgroups and pods (see docs/simulate.md)\n",
    )


def test_a_misspelt_key_is_named_with_the_closest_known_one(tmp_path: Path) -> None:
    path = tmp_path / "typo.yaml"
    path.write_text(
        "nodes: [{name: n1, allocatable: {cpu: '1', memory: 1Gi}}]\n"
        "jobs: [{at: 0, fle: job.yaml}]\n"
        "untill: settled\n"
    )
    assert simulate(path) == (
        2,
        "",
        'vcbus simulate: unknown field "jobs[0].fle"; did you mean "file"?; '
        'unknown field "untill"; did you mean "until"?\n',
    )


def test_a_snapshot_scenario_has_keys_of_its_own(tmp_path: Path) -> None:
    path = tmp_path / "snap.yaml"
    path.write_text("nodes: []\npodgroups: []\npods: []\ncycle: 2\n")
    status, _, err = simulate(path)
    assert (status, err) == (
        2,
        'vcbus simulate: unknown field "cycle"; did you mean "cycles"?\n',
    )

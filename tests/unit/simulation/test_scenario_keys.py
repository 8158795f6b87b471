"""``vcbus simulate`` refuses a file that is not a scenario, and a misspelt key, exit 2."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

from vcbus.core.scheduling import scenario_objects
from vcbus.services.cli import main
from vcbus.services.simulation import snapshot
from vcbus.services.simulation.scenario import check_keys

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


def _documented_keys(docstring: str, start: str, end: str) -> set[str]:
    """The top-level keys a docstring names from ``start`` up to ``end`` (or its end).

    Parenthesised asides (a key's own fields, its default) are left out.
    """
    text = docstring[docstring.index(start) :]
    text = text[: text.index(end)] if end in text else text
    while (shorter := re.sub(r"\([^()]*\)", "", text)) != text:
        text = shorter
    return set(re.findall(r"``(\w+)``", text))


def test_every_documented_snapshot_key_is_accepted(tmp_path: Path) -> None:
    """The keys the snapshot readers and the snapshot runner document all pass the key check."""
    objects = _documented_keys(scenario_objects.__doc__ or "", "A document holds", "\n\n")
    run = _documented_keys(snapshot.__doc__ or "", "Document keys", "a timeline")
    documented = objects | run
    assert {"reservation", "willBind", "cycles", "now", "step", "events", "config"} <= documented
    document = dict.fromkeys(documented)
    document["podgroups"] = []
    check_keys(document)
    path = tmp_path / "snap.yaml"
    path.write_text(
        "nodes: [{name: n1, allocatable: {cpu: '1', memory: 1Gi}}]\n"
        "podgroups: []\npods: []\nwillBind: []\n"
        "reservation: {target: default/j, locked: [n1], electedAt: '2026-01-01T00:00:00Z'}\n"
    )
    status, out, err = simulate(path)
    assert (status, err) == (0, "")
    assert '"targetJob": "default/j"' in out or "default/j" in out

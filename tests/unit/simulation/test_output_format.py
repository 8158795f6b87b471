"""The format of ``vcbus simulate --json`` (full mode): its types, its schema, real outputs."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from vcbus.services.simulation.outcome_format import SCHEMA_PATH, FullOutcome, render_schema
from vcbus.services.simulation.run import simulate_document
from vcbus.services.simulation.scenario import load_document

GOLDEN = sorted((Path(__file__).resolve().parent / "golden").glob("full-*.json"))


def test_schema_file_is_current_when_rendered_from_the_types() -> None:
    assert SCHEMA_PATH.read_text() == render_schema(), (
        "run: python -m vcbus.services.simulation.outcome_format"
    )


@pytest.mark.parametrize("path", GOLDEN, ids=lambda p: p.stem)
def test_output_has_the_documented_format_when_a_scenario_runs(path: Path) -> None:
    outcome = msgspec.convert(json.loads(path.read_text()), FullOutcome, strict=True)
    assert outcome.stopped_by in {"settled", "stalled"}
    for job in outcome.jobs.values():
        if job.times.finished is not None and job.times.submitted is not None:
            assert job.times.submitted <= job.times.finished


def test_format_refuses_an_output_when_a_field_is_unknown() -> None:
    document = json.loads(GOLDEN[0].read_text())
    document["summary"]["surprise"] = 1
    with pytest.raises(msgspec.ValidationError, match="surprise"):
        msgspec.convert(document, FullOutcome, strict=True)


def test_cycles_say_what_each_action_decided_when_asked_for() -> None:
    path = Path(__file__).resolve().parents[3] / "examples" / "scenarios" / "full-gang.yaml"
    document = load_document(path.read_text())

    outcome = msgspec.convert(
        simulate_document(document, path.parent, cycles=True), FullOutcome, strict=True
    )

    assert outcome.cycles is not None
    assert outcome.cycles_left_out == 0
    picks = [p for c in outcome.cycles for p in c.enqueue]
    assert [p.job for p in picks if p.admitted] == ["default/train-a", "default/train-b"]
    assert all(p.share is not None for p in picks)
    bound = {b.job: b.pods for c in outcome.cycles if c.service == "allocator" for b in c.bound}
    assert bound == {"default/train-a": 4, "default/train-b": 4}
    times = [c.t for c in outcome.cycles]
    assert times == sorted(times)


def test_cycles_are_left_out_when_not_asked_for() -> None:
    outcome = json.loads(GOLDEN[0].read_text())
    assert "cycles" not in outcome

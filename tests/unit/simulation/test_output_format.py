"""The format of ``vcbus simulate --json`` (full mode): its types, its schema, real outputs."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from shared.runtime.outcome_format import SCHEMA_PATH, FullOutcome, render_schema

GOLDEN = sorted((Path(__file__).resolve().parent / "golden").glob("full-*.json"))


def test_schema_file_is_current_when_rendered_from_the_types() -> None:
    assert SCHEMA_PATH.read_text() == render_schema(), (
        "run: python -m shared.runtime.outcome_format"
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

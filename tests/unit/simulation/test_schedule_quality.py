"""Schedule quality, measured by ``vcbus simulate``'s summary on the shipped scenarios.

- ``weighted-queues.yaml`` (docs/design.md#queue-shares): two saturating queues with weights 1 and 3
  hold 25 % / 75 % of what runs (± 5 points) in every minute after the first, at full use.
- ``knavigator-burst.yaml`` (docs/design.md#arrival-order): nine waves submitted at one moment, in
  wave order, each filling the cluster exactly, run one after the other: 9 × 30 s, within 5 %.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from vcbus.services.simulation.run import simulate_document
from vcbus.services.simulation.scenario import load_document

SCENARIOS = Path(__file__).resolve().parents[3] / "examples" / "scenarios"


def summary(name: str) -> Any:
    path = SCENARIOS / name
    outcome = simulate_document(load_document(path.read_text()), path.parent)
    assert outcome["stoppedBy"] == "settled"
    return outcome["summary"]


def test_queues_hold_their_weights_in_every_minute_when_both_saturate() -> None:
    result = summary("weighted-queues.yaml")
    full_minutes = [w for w in result["windows"][1:] if w["to"] - w["from"] == 60.0]
    assert len(full_minutes) >= 3
    for window in full_minutes:
        assert window["shares"]["light"]["cpu"] == pytest.approx(0.25, abs=0.05), window
        assert window["shares"]["heavy"]["cpu"] == pytest.approx(0.75, abs=0.05), window
        assert window["utilisation"]["cpu"] >= 0.95, window
    assert result["unfinished"] == []


def test_burst_runs_in_submission_order_when_submitted_at_one_moment() -> None:
    result = summary("knavigator-burst.yaml")
    assert result["makespan"] <= 1.05 * 270
    assert result["unfinished"] == []

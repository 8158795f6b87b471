"""Every event type survives the wire, and its encoding is pinned by a golden file.

A golden file per tag (``golden/<tag>.json``) holds the encoding of a sample with every
field set. A difference means the wire changed: review it (STYLE: contracts change only by
addition), then regenerate with
``VCBUS_UPDATE_GOLDEN=1 python -m pytest tests/unit/contracts``.
"""

from __future__ import annotations

import os
from pathlib import Path

import msgspec
import pytest

from contracts import Event, tag_of
from tests.unit.contracts.samples import EVENT_TYPES, minimal, sample, union_of

GOLDEN = Path(__file__).resolve().parent / "golden"
UPDATE = os.environ.get("VCBUS_UPDATE_GOLDEN") == "1"


def pretty(event: Event) -> str:
    return msgspec.json.format(msgspec.json.encode(event), indent=2).decode() + "\n"


@pytest.mark.parametrize("kind", EVENT_TYPES, ids=tag_of)
@pytest.mark.parametrize("build", [sample, minimal], ids=["full", "minimal"])
def test_event_equals_itself_when_decoded_from_its_encoding(kind, build) -> None:
    event = build(kind)
    data = msgspec.json.encode(event)
    assert msgspec.json.decode(data, type=kind) == event
    assert msgspec.json.Decoder(union_of(kind)).decode(data) == event


@pytest.mark.parametrize("kind", EVENT_TYPES, ids=tag_of)
def test_encoding_matches_golden_when_every_field_is_set(kind) -> None:
    golden = GOLDEN / f"{tag_of(kind)}.json"
    out = pretty(sample(kind))
    if UPDATE:
        golden.write_text(out)
    assert golden.exists(), f"no golden for {tag_of(kind)}; run with VCBUS_UPDATE_GOLDEN=1"
    assert out == golden.read_text()


@pytest.mark.parametrize("kind", EVENT_TYPES, ids=tag_of)
def test_golden_record_decodes_to_the_sample_when_read_back(kind) -> None:
    data = (GOLDEN / f"{tag_of(kind)}.json").read_bytes()
    assert msgspec.json.Decoder(union_of(kind)).decode(data) == sample(kind)


def test_every_golden_file_belongs_to_a_type_when_listed() -> None:
    assert {p.stem for p in GOLDEN.glob("*.json")} == {tag_of(kind) for kind in EVENT_TYPES}

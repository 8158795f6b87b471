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

from tests.unit.contracts.samples import EVENT_TYPES, minimal, sample, union_of
from vcbus.contracts import Event, tag_of

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


BEFORE_JOB_RENAME = GOLDEN / "before_job_rename"
"""Records of the events that named their job ``job_key`` before the field became ``job``."""


@pytest.mark.parametrize("path", sorted(BEFORE_JOB_RENAME.glob("*.json")), ids=lambda p: p.stem)
def test_a_record_written_with_job_key_decodes_with_the_key_in_job(path: Path) -> None:
    kind = next(k for k in EVENT_TYPES if tag_of(k) == path.stem)
    data = path.read_bytes()
    assert b'"job_key"' in data

    decoded = msgspec.json.Decoder(union_of(kind)).decode(data)

    assert decoded == msgspec.structs.replace(sample(kind), job="job_key-sample")
    assert b'"job_key":' not in msgspec.json.encode(decoded)


def test_every_event_about_one_job_names_it_in_job() -> None:
    keyed = [k for k in EVENT_TYPES if "job_key" in k.__struct_fields__]
    assert keyed == []
    assert {path.stem for path in BEFORE_JOB_RENAME.glob("*.json")} == {
        "job.abort_accepted.v1",
        "job.delete_accepted.v1",
        "job.deleted.v1",
        "job.rejected.v1",
        "job.resume_accepted.v1",
        "job.status_changed.v1",
    }

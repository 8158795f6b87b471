"""Schema evolution: readers and writers of different versions understand each other.

A newer writer may add fields (with defaults) anywhere; this reader skips them. An older
writer did not write the fields added since (all have defaults); this reader fills them in.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from msgspec import inspect as mi

from tests.unit.contracts.samples import (
    EVENT_TYPES,
    UNKNOWN_FIELD,
    UNKNOWN_VALUE,
    minimal,
    sample,
    type_info,
    union_of,
    walk_objects,
)
from vcbus.contracts import Event, JobAdmitted, tag_of


def as_json(event: Event) -> Any:
    return msgspec.json.decode(msgspec.json.encode(event))


def with_unknown_fields(obj: dict[str, Any], info: mi.StructType) -> dict[str, Any]:
    return {**obj, UNKNOWN_FIELD: UNKNOWN_VALUE}


def without_defaulted_fields(obj: dict[str, Any], info: mi.StructType) -> dict[str, Any]:
    optional = {field.encode_name for field in info.fields if not field.required}
    return {name: value for name, value in obj.items() if name not in optional}


@pytest.mark.parametrize("kind", EVENT_TYPES, ids=tag_of)
def test_old_reader_decodes_a_newer_record_when_it_has_unknown_fields(kind) -> None:
    event = sample(kind)
    newer = walk_objects(as_json(event), type_info(kind), with_unknown_fields)
    data = msgspec.json.encode(newer)
    assert UNKNOWN_FIELD.encode() in data
    assert msgspec.json.Decoder(union_of(kind)).decode(data) == event


@pytest.mark.parametrize("kind", EVENT_TYPES, ids=tag_of)
def test_reader_fills_defaults_when_an_older_record_lacks_the_fields_added_since(kind) -> None:
    older = walk_objects(as_json(sample(kind)), type_info(kind), without_defaulted_fields)
    data = msgspec.json.encode(older)
    assert msgspec.json.Decoder(union_of(kind)).decode(data) == minimal(kind)


def test_unknown_fields_are_added_inside_nested_objects_too() -> None:
    newer: Any = walk_objects(
        as_json(sample(JobAdmitted)), type_info(JobAdmitted), with_unknown_fields
    )
    assert UNKNOWN_FIELD in newer["job"]["spec"]["tasks"][0]["template"]["metadata"]

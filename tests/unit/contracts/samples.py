"""Deterministic sample events for the contract tests, built from the types themselves.

Every field is set, to a value other than its default where the type allows, so a golden
file shows every field a type writes. A field of a shape this builder does not know fails
here, so a new kind of field is given a sample value on purpose.
"""

from __future__ import annotations

import importlib
import pkgutil
from datetime import UTC, datetime
from typing import Any

import msgspec
from msgspec import inspect as mi

import vcbus.contracts.events
from vcbus.contracts import TOPIC_SPECS, Event, tag_of
from vcbus.contracts.events.cluster_commands import ClusterCommand
from vcbus.contracts.topics import TOPIC_BY_TAG

SAMPLE_TIME = datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)
ANY_JSON: object = {"kept": ["as", "written", 1, True, None]}
UNKNOWN_FIELD = "addedInALaterVersion"
UNKNOWN_VALUE: object = {"nested": [1, "two"]}


def _load_event_modules() -> None:
    for module in pkgutil.iter_modules(vcbus.contracts.events.__path__):
        importlib.import_module(f"vcbus.contracts.events.{module.name}")


def _concrete(kind: type[Event]) -> list[type[Event]]:
    """The event types derived from ``kind``; bases kept in private modules (``_job``) are
    not wire types and are left out, their subclasses kept."""
    found: list[type[Event]] = []
    for sub in kind.__subclasses__():
        if not sub.__module__.rpartition(".")[2].startswith("_"):
            found.append(sub)
        found.extend(_concrete(sub))
    return found


_load_event_modules()
EVENT_TYPES: tuple[type[Event], ...] = tuple(sorted(set(_concrete(Event)), key=tag_of))
"""Every event and command type, in tag order."""


def union_of(kind: type[Event]) -> Any:
    """The union a reader decodes ``kind`` with: its topic's, or the cluster commands'."""
    spec = TOPIC_BY_TAG.get(tag_of(kind))
    return ClusterCommand if spec is None else TOPIC_SPECS[spec.topic].union


def _value(info: mi.Type, default: object, where: str, full: bool) -> object:
    match info:
        case mi.StructType():
            return _struct(info, where, full)
        case mi.StrType():
            return f"{where}-sample"
        case mi.BoolType():
            return not default if isinstance(default, bool) else True
        case mi.IntType():
            return 8 if default == 7 else 7
        case mi.FloatType():
            return 1.5
        case mi.DateTimeType():
            return SAMPLE_TIME
        case mi.EnumType():
            members = list(info.cls)
            return members[-1] if members[-1] != default else members[0]
        case mi.VarTupleType():
            return (_value(info.item_type, msgspec.NODEFAULT, where, full),)
        case mi.ListType():
            return [_value(info.item_type, msgspec.NODEFAULT, where, full)]
        case mi.FrozenSetType():
            return frozenset({_value(info.item_type, msgspec.NODEFAULT, where, full)})
        case mi.DictType():
            key = _value(info.key_type, msgspec.NODEFAULT, f"{where}-key", full)
            return {key: _value(info.value_type, msgspec.NODEFAULT, where, full)}
        case mi.UnionType():
            chosen = next(t for t in info.types if not isinstance(t, mi.NoneType))
            return _value(chosen, msgspec.NODEFAULT, where, full)
        case mi.AnyType():
            return ANY_JSON
        case mi.CustomType() if info.cls is object:  # a part kept as written (pod spec)
            return ANY_JSON
        case mi.LiteralType():
            return info.values[0]
    raise TypeError(f"{where}: no sample value for {info!r}; add one to samples.py")


def _struct(info: mi.StructType, where: str, full: bool) -> object:
    kwargs = {
        field.name: _value(field.type, field.default, field.name, full)
        for field in info.fields
        if full or field.required
    }
    return info.cls(**kwargs)


def sample(kind: type[Event]) -> Event:
    """An instance of ``kind`` with every field set."""
    built = _struct(_info(kind), kind.__name__, full=True)
    assert isinstance(built, kind)
    return built


def minimal(kind: type[Event]) -> Event:
    """An instance of ``kind`` with only its required fields set, the others defaulted."""
    built = _struct(_info(kind), kind.__name__, full=False)
    assert isinstance(built, kind)
    return built


def _info(kind: type[Event]) -> mi.StructType:
    info = mi.type_info(kind)
    assert isinstance(info, mi.StructType)
    return info


def walk_objects(value: object, info: mi.Type, visit: Any) -> object:
    """Return ``value`` (decoded JSON of type ``info``) with ``visit`` applied to each object
    that stands for a Struct, innermost first."""
    match info:
        case mi.StructType() if isinstance(value, dict):
            out = dict(value)
            for field in info.fields:
                if field.encode_name in out:
                    out[field.encode_name] = walk_objects(out[field.encode_name], field.type, visit)
            result: object = visit(out, info)
            return result
        case mi.VarTupleType() | mi.ListType() | mi.FrozenSetType() if isinstance(
            value, list | tuple
        ):
            return [walk_objects(item, info.item_type, visit) for item in value]
        case mi.DictType() if isinstance(value, dict):
            return {k: walk_objects(v, info.value_type, visit) for k, v in value.items()}
        case mi.UnionType() if value is not None:
            structs = [t for t in info.types if isinstance(t, mi.StructType)]
            if len(structs) == 1:
                return walk_objects(value, structs[0], visit)
            return value
    return value


def type_info(kind: type[Event]) -> mi.StructType:
    """msgspec's description of ``kind``."""
    return _info(kind)

"""Readers of the Kubernetes and Volcano objects vcbus takes as written.

Node, Queue and PriorityClass, one reader each, used wherever such objects are read. Each
reader takes a decoded YAML or JSON value and accepts two shapes: the Kubernetes
manifest, and vcbus' flat object (the shape of ``vcbus.contracts.objects``, as in simulation
scenarios). Quantities are written as Kubernetes writes them (``"32"``, ``"500m"``,
``"256Gi"``, ``110``).

- **Node**: ``{name, allocatable, labels, taints, unschedulable}``, or a Node manifest
  (``metadata.name``, ``metadata.labels``, ``spec.taints``, ``spec.unschedulable``,
  ``status.allocatable`` falling back to ``status.capacity``; the flat shape falls back to
  ``capacity`` too). Label values are text (numbers are written as text); labels are kept
  in key order.
- **Queue**: ``{name, weight, capability, guarantee, state, parent, priority,
  reclaimable}`` (a mapping without ``kind``), or a ``scheduling.volcano.sh/v1beta1`` Queue
  (``metadata.name``, ``spec.weight``, ``spec.capability``, ``spec.guarantee.resource``,
  ``spec.parent``, ``spec.priority``, ``spec.reclaimable``, ``status.state``).
- **PriorityClass**: a ``scheduling.k8s.io/v1`` PriorityClass (``metadata.name``,
  ``value``), read as its name and value.

The structure is decoded by ``msgspec.convert``; a bad value raises :class:`ManifestError`
with the JSON path of the value (``$.spec.taints[0]``) and the reason, in words a person
writing YAML reads (``expected a mapping, got list``). Unknown fields are ignored, as the
API server's clients do. :func:`read_as` reads other parts of a document (a scenario's
settings) the same way.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TypeVar

import msgspec

from vcbus.contracts.objects.node import Node, Taint
from vcbus.contracts.objects.queue import Queue, QueueState
from vcbus.contracts.quantity import QuantityError, Resources, parse_resources

QUEUE_API_VERSION = "scheduling.volcano.sh/v1beta1"
QUEUE_KIND = "Queue"
PRIORITY_CLASS_API_VERSION = "scheduling.k8s.io/v1"
PRIORITY_CLASS_KIND = "PriorityClass"

T = TypeVar("T")


class ManifestError(ValueError):
    """A value that does not describe the object: where (a JSON path) and why.

    ``str()`` is ``<path>: <reason>`` with the path written from the object down
    (``spec.taints[0]: ...``), or the reason alone for the object itself; :meth:`at`
    puts the object's own place in front (``nodes[2].spec.taints[0]: ...``).
    """

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        """The JSON path of the bad value, from ``$``, the object read."""
        self.reason = reason
        super().__init__(self.at(""))

    def at(self, where: str) -> str:
        """Return the message with the object's own place (``nodes[2]``) in front."""
        below = self.path[1:]
        if not where:
            below = below.removeprefix(".")
        place = f"{where}{below}"
        return f"{place}: {self.reason}" if place else self.reason


# ---------------------------------------------------------------------------------------
# Node


class _NodeMeta(msgspec.Struct, frozen=True, kw_only=True):
    name: str | None = None
    labels: dict[str, object] | None = None


class _NodeSpec(msgspec.Struct, frozen=True, kw_only=True):
    taints: tuple[Taint, ...] | None = None
    unschedulable: bool | None = None


class _NodeStatus(msgspec.Struct, frozen=True, kw_only=True):
    allocatable: dict[str, object] | None = None
    capacity: dict[str, object] | None = None


class _NodeManifest(msgspec.Struct, frozen=True, kw_only=True):
    metadata: _NodeMeta | None = None
    spec: _NodeSpec | None = None
    status: _NodeStatus | None = None


class _FlatNode(msgspec.Struct, frozen=True, kw_only=True):
    name: str | None = None
    allocatable: dict[str, object] | None = None
    capacity: dict[str, object] | None = None
    labels: dict[str, object] | None = None
    taints: tuple[Taint, ...] | None = None
    unschedulable: bool | None = None


def read_node(raw: object) -> Node:
    """Read a Node manifest or a flat node (see the module docstring).

    Raises:
        ManifestError: a missing name, a bad quantity, label or taint, a negative
            allocatable amount.
    """
    document = _mapping(raw, "a mapping")
    if "metadata" in document:
        manifest = _convert(raw, _NodeManifest)
        metadata = manifest.metadata or _NodeMeta()
        spec = manifest.spec or _NodeSpec()
        status = manifest.status or _NodeStatus()
        name, name_at = metadata.name, "$.metadata.name"
        labels, labels_at = metadata.labels, "$.metadata.labels"
        taints, unschedulable = spec.taints, spec.unschedulable
        resources, resources_at = _node_resources(status, "$.status")
    else:
        flat = _convert(raw, _FlatNode)
        name, name_at = flat.name, "$.name"
        labels, labels_at = flat.labels, "$.labels"
        taints, unschedulable = flat.taints, flat.unschedulable
        resources, resources_at = _node_resources(flat, "$")
    if not name:
        raise ManifestError(name_at, "a node needs a non-empty name")
    allocatable = _quantities(resources or {}, resources_at)
    for resource, amount in allocatable.items():
        if amount < 0:
            given = (resources or {})[resource]
            raise ManifestError(
                f"{resources_at}.{resource}",
                f"allocatable must not be negative, got {given!r}",
            )
    return Node(
        name=name,
        allocatable=allocatable,
        labels=_labels(labels or {}, labels_at),
        taints=taints or (),
        unschedulable=bool(unschedulable),
    )


def _node_resources(
    holder: _NodeStatus | _FlatNode, where: str
) -> tuple[dict[str, object] | None, str]:
    if holder.allocatable is not None:
        return holder.allocatable, f"{where}.allocatable"
    if holder.capacity is not None:
        return holder.capacity, f"{where}.capacity"
    return None, f"{where}.allocatable"


def _labels(values: Mapping[str, object], where: str) -> dict[str, str]:
    labels: dict[str, str] = {}
    for key in sorted(values):
        value = values[key]
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise ManifestError(f"{where}.{key}", f"label values are text, got {value!r}")
        labels[key] = str(value)
    return labels


# ---------------------------------------------------------------------------------------
# Queue


class _QueueMeta(msgspec.Struct, frozen=True, kw_only=True):
    name: str | None = None


class _Guarantee(msgspec.Struct, frozen=True, kw_only=True):
    resource: dict[str, object] | None = None


class _QueueSpec(msgspec.Struct, frozen=True, kw_only=True):
    weight: int = 1
    capability: dict[str, object] | None = None
    guarantee: _Guarantee | None = None
    parent: str = ""
    priority: int = 0
    reclaimable: bool = True


class _QueueStatus(msgspec.Struct, frozen=True, kw_only=True):
    state: QueueState = QueueState.OPEN


class _QueueManifest(msgspec.Struct, frozen=True, kw_only=True):
    metadata: _QueueMeta | None = None
    spec: _QueueSpec | None = None
    status: _QueueStatus | None = None


class _FlatQueue(msgspec.Struct, frozen=True, kw_only=True):
    name: str | None = None
    weight: int = 1
    capability: dict[str, object] | None = None
    guarantee: dict[str, object] | None = None
    state: QueueState = QueueState.OPEN
    parent: str = ""
    priority: int = 0
    reclaimable: bool = True


def read_queue(raw: object) -> Queue:
    """Read a Volcano Queue manifest or a flat queue (see the module docstring).

    Raises:
        ManifestError: another kind of object, a missing name, a bad quantity or value.
    """
    document = _mapping(raw, "a Queue object (a mapping)")
    if "kind" not in document:
        flat = _convert(raw, _FlatQueue)
        if not flat.name:
            raise ManifestError("$.name", "a queue needs a non-empty name")
        return Queue(
            name=flat.name,
            weight=flat.weight,
            capability=_quantities(flat.capability or {}, "$.capability"),
            guarantee=_quantities(flat.guarantee or {}, "$.guarantee"),
            state=flat.state,
            parent=flat.parent,
            priority=flat.priority,
            reclaimable=flat.reclaimable,
        )
    _expect_kind(document, QUEUE_API_VERSION, QUEUE_KIND)
    manifest = _convert(raw, _QueueManifest)
    name = (manifest.metadata or _QueueMeta()).name
    if not name:
        raise ManifestError("$.metadata.name", "a queue needs a non-empty name")
    spec = manifest.spec or _QueueSpec()
    guarantee = spec.guarantee or _Guarantee()
    return Queue(
        name=name,
        weight=spec.weight,
        capability=_quantities(spec.capability or {}, "$.spec.capability"),
        guarantee=_quantities(guarantee.resource or {}, "$.spec.guarantee.resource"),
        state=(manifest.status or _QueueStatus()).state,
        parent=spec.parent,
        priority=spec.priority,
        reclaimable=spec.reclaimable,
    )


# ---------------------------------------------------------------------------------------
# PriorityClass


class _PriorityClassManifest(msgspec.Struct, frozen=True, kw_only=True):
    metadata: _QueueMeta | None = None
    value: int | None = None


def read_priority_class(raw: object) -> tuple[str, int]:
    """Read a PriorityClass manifest as its name and value.

    ``kind`` and ``apiVersion`` are checked when given.

    Raises:
        ManifestError: another kind of object, a missing name or value.
    """
    document = _mapping(raw, "a PriorityClass object (a mapping)")
    if "kind" in document or "apiVersion" in document:
        _expect_kind(document, PRIORITY_CLASS_API_VERSION, PRIORITY_CLASS_KIND)
    manifest = _convert(raw, _PriorityClassManifest)
    name = (manifest.metadata or _QueueMeta()).name
    if not name:
        raise ManifestError("$.metadata.name", "a PriorityClass needs a non-empty name")
    if manifest.value is None:
        raise ManifestError("$.value", "a PriorityClass needs a whole-number value")
    return name, manifest.value


# ---------------------------------------------------------------------------------------
# Shared


def _expect_kind(document: Mapping[str, object], api_version: str, kind: str) -> None:
    if document.get("kind") != kind or document.get("apiVersion") != api_version:
        raise ManifestError(
            "$",
            f"expected a {api_version} {kind}, got kind {document.get('kind')!r} "
            f"(apiVersion {document.get('apiVersion')!r})",
        )


def _mapping(raw: object, what: str) -> Mapping[str, object]:
    if not isinstance(raw, Mapping):
        raise ManifestError("$", f"expected {what}, got {type(raw).__name__}")
    return raw


def _quantities(values: Mapping[str, object], where: str) -> Resources:
    quantities: dict[str, str | int | float] = {}
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise ManifestError(
                f"{where}.{name}", f"expected a quantity such as 32, 500m or 256Gi, got {value!r}"
            )
        quantities[name] = value
    try:
        return parse_resources(quantities)
    except QuantityError as exc:
        raise ManifestError(where, str(exc)) from None


_AT = re.compile(r"^(?P<reason>.*) - at `(?P<path>\$[^`]*)`$")
_EXPECTED = re.compile(r"^Expected `(?P<wanted>[^`]*)`, got `[^`]*`$")
_WANTED = {
    "object": "a mapping",
    "array": "a list",
    "bool": "true or false",
    "int": "a whole number",
    "str": "text",
    "float": "a number",
}
_STEP = re.compile(r"\.(?P<field>[^.\[]+)|\[(?P<index>\d+)\]")


def read_as(raw: object, kind: type[T]) -> T:
    """Read a decoded YAML or JSON value as ``kind`` with ``msgspec.convert``.

    For the parts of a document that are not Kubernetes objects (a scenario's settings).
    Strict: text is not read as a number.

    Raises:
        ManifestError: the JSON path of the first bad value, and the reason in words.
    """
    return _convert(raw, kind)


def _convert(raw: object, kind: type[T]) -> T:
    """``msgspec.convert`` (strict: no text for numbers), its error as a ManifestError."""
    try:
        return msgspec.convert(raw, kind)
    except msgspec.ValidationError as exc:
        raise _explained(str(exc), raw) from None


def _explained(message: str, raw: object) -> ManifestError:
    located = _AT.match(message)
    reason, path = (located["reason"], located["path"]) if located else (message, "$")
    expected = _EXPECTED.match(reason)
    if "[...]" in path:  # a value in a mapping: msgspec does not say under which key
        found_text = ""
    else:
        found = _value_at(raw, path)
        found_text = (
            f", got {type(found).__name__}"
            if expected and expected["wanted"].startswith(("object", "array"))
            else f", got {found!r}"
        )
    if expected:
        wanted = expected["wanted"].removesuffix(" | null")
        if wanted in _WANTED:
            reason = f"expected {_WANTED[wanted]}{found_text}"
    elif reason.startswith("Invalid RFC3339"):
        reason = f"expected an RFC 3339 time{found_text}"
    return ManifestError(path, reason)


def _value_at(raw: object, path: str) -> object:
    value = raw
    for step in _STEP.finditer(path[1:]):
        if step["field"] is not None and isinstance(value, Mapping):
            value = value.get(step["field"])
        elif step["index"] is not None and isinstance(value, list | tuple):
            index = int(step["index"])
            value = value[index] if index < len(value) else None
        else:
            return None
    return value

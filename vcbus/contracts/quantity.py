"""Kubernetes resource quantities as exact integers in base units.

``cpu`` is held in milli-CPU, ``memory``, ``ephemeral-storage`` and ``storage`` in bytes,
``pods`` as a count, and every other (extended) resource such as ``nvidia.com/gpu`` in
milli-units, as Volcano's ``Resource`` does (volcano ``pkg/scheduler/api/resource_info.go``
``NewResource``).
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation

Resources = dict[str, int]
"""A resource list in base units: ``{"cpu": 500, "memory": 2147483648}``."""

CPU = "cpu"
MEMORY = "memory"
PODS = "pods"

_BYTE_RESOURCES = frozenset({MEMORY, "ephemeral-storage", "storage"})
_COUNT_RESOURCES = frozenset({PODS})

_SUFFIXES: Mapping[str, Decimal] = {
    "": Decimal(1),
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": Decimal(10) ** 3,
    "M": Decimal(10) ** 6,
    "G": Decimal(10) ** 9,
    "T": Decimal(10) ** 12,
    "P": Decimal(10) ** 15,
    "E": Decimal(10) ** 18,
    "Ki": Decimal(2) ** 10,
    "Mi": Decimal(2) ** 20,
    "Gi": Decimal(2) ** 30,
    "Ti": Decimal(2) ** 40,
    "Pi": Decimal(2) ** 50,
    "Ei": Decimal(2) ** 60,
}
# ASCII digits only (docs/design.md#names-and-numbers): Python's \d would take "１" (full-width) or
# "١" (Arabic), which Kubernetes' ParseQuantity refuses.
_QUANTITY = re.compile(
    r"^(?P<num>[+-]?(?:\d+\.?\d*|\.\d+))(?:(?P<exp>[eE][+-]?\d+)|(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]))?$",
    re.ASCII,
)
_MAX_DIGITS = 40
MAX_BASE_UNITS = 2**63 - 1
"""The largest quantity, in base units (milli-cpu, bytes): Kubernetes allows no more."""
_MAX_EXPONENT = 40
"""A decimal exponent beyond this is out of range whatever the digits (2^63 < 1e19)."""


class QuantityError(ValueError):
    """A text that is not a Kubernetes quantity."""


def parse_quantity(value: str | int | float) -> Decimal:
    """Parse a Kubernetes quantity (``500m``, ``2Gi``, ``1e3``, ``4``) into an exact decimal.

    Args:
        value: the quantity as YAML gives it: text or a number.

    Returns:
        The value in plain units (``"500m"`` → ``0.5``).

    Raises:
        QuantityError: when the text is not a quantity.
    """
    if isinstance(value, bool):
        raise QuantityError(f"quantity must be a number or text, not {value!r}")
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError(f"quantity {value!r} is not finite")
        return Decimal(repr(value))
    text = value.strip()
    match = _QUANTITY.match(text)
    if match is None or len(text) > _MAX_DIGITS:
        raise QuantityError(
            f"quantities must match the regular expression "
            f"'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$', got {value!r}"
        )
    try:
        number = Decimal(match["num"])
        if match["exp"]:
            exponent = int(match["exp"][1:])
            if abs(exponent) > _MAX_EXPONENT:
                raise QuantityError(
                    f"quantity {value!r} is out of range: no quantity may be larger than "
                    f"2^63-1 (Kubernetes)"
                )
            return number * (Decimal(10) ** exponent)
    except (InvalidOperation, ValueError) as exc:
        if isinstance(exc, QuantityError):
            raise
        raise QuantityError(f"quantity {value!r} is not a number") from exc
    return number * _SUFFIXES[match["suffix"] or ""]


@functools.lru_cache(maxsize=4096, typed=True)
def units_per_whole(name: str) -> int:
    """Base units in one whole unit of a resource: 1000 for cpu and extended resources."""
    return 1 if name in _BYTE_RESOURCES or name in _COUNT_RESOURCES else 1000


def to_base_units(name: str, value: str | int | float) -> int:
    """Convert one quantity to the integer base unit of its resource, rounding up.

    Remembered per (name, value, type): pod templates repeat the same few quantities,
    read again whenever a PodGroup or a pod is built.

    Args:
        name: the resource name (``cpu``, ``memory``, ``nvidia.com/gpu`` …).
        value: the quantity.

    Returns:
        milli-units for cpu and extended resources, bytes for memory and storage,
        a count for pods.
    """
    quantity = parse_quantity(value)
    base = quantity if name in _BYTE_RESOURCES or name in _COUNT_RESOURCES else quantity * 1000
    if abs(base) > MAX_BASE_UNITS:
        raise QuantityError(
            f"quantity {value!r} of {name} is out of range: no quantity may be larger than "
            f"2^63-1 in its base unit (Kubernetes)"
        )
    return math.ceil(base)


def parse_resources(values: Mapping[str, str | int | float]) -> Resources:
    """Convert a Kubernetes resource list to base units, keys sorted.

    Keys that are not resources of a pod (``count/*``, ``requests.*``, ``limits.*``) are
    dropped, as Volcano's ``NewResource`` drops them.
    """
    out: Resources = {}
    for name in sorted(values):
        if name.startswith(("count/", "requests.", "limits.")):
            continue
        out[name] = to_base_units(name, values[name])
    return out


def format_quantity(name: str, amount: int) -> str:
    """Render a base-unit amount as a short Kubernetes quantity (for tables)."""
    if name in _BYTE_RESOURCES:
        for suffix, factor in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
            if amount and amount % factor == 0:
                return f"{amount // factor}{suffix}"
        return str(amount)
    if name in _COUNT_RESOURCES:
        return str(amount)
    if amount % 1000 == 0:
        return str(amount // 1000)
    return f"{amount}m"


def add(left: Mapping[str, int], right: Mapping[str, int], times: int = 1) -> Resources:
    """Return ``left + times × right`` per dimension, keys sorted."""
    out = dict(left)
    for name, amount in right.items():
        out[name] = out.get(name, 0) + amount * times
    return {name: out[name] for name in sorted(out)}

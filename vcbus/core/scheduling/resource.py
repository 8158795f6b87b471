"""Resource vectors and their comparison rules, after Volcano's ``api.Resource``.

Port of volcano@v1.12.0 ``pkg/scheduler/api/resource_info.go`` (``Resource``, ``LessEqual``,
``LessEqualWithDimension``, ``MinDimensionResource``, ``Diff``, ``IsEmpty``) and
``pkg/scheduler/api/helpers/helpers.go`` (``Share``, ``Min``, ``Max``).

Deliberate deviations:
- A resource is an immutable mapping of dimension name to amount (``cpu`` in milli, ``memory``
  in bytes, others in milli-units, as ``vcbus.contracts.quantity`` gives them); every operation
  returns a new value instead of mutating its receiver.
- ``pods`` is never a dimension here: the pod count of a node is checked by the predicates
  plugin against the node's ``pods`` allocatable (B3.11: pod requests carry no ``pods``).
"""

from __future__ import annotations

import enum
import math
from collections.abc import Iterable, Iterator, Mapping

from vcbus.core.units import show_amount

CPU = "cpu"
MEMORY = "memory"
PODS = "pods"

MIN_RESOURCE = 0.1
"""Volcano's ``minResource``: two amounts closer than this are equal (milli-CPU, bytes)."""


class Missing(enum.Enum):
    """How a dimension absent on the right compares (Volcano ``DimensionDefaultValue``)."""

    ZERO = "zero"
    INFINITY = "infinity"


def dimension_order(names: Iterable[str]) -> tuple[str, ...]:
    """Return resource names in the canonical order: cpu, memory, then the rest sorted."""
    rest = sorted(n for n in set(names) if n not in (CPU, MEMORY, PODS))
    return (CPU, MEMORY, *rest)


class Resource(Mapping[str, float]):
    """An immutable resource vector (a mapping of dimension to amount).

    ``cpu`` and ``memory`` always exist (zero when absent), as in Volcano where they are struct
    fields; other dimensions exist only when given.
    """

    __slots__ = ("_amounts", "_hash", "_order")

    def __init__(self, amounts: Mapping[str, float] | None = None) -> None:
        values: dict[str, float] = {CPU: 0.0, MEMORY: 0.0}
        if amounts:
            for name, amount in amounts.items():
                if name == PODS or name.startswith(("count/", "requests.", "limits.")):
                    continue
                values[name] = float(amount)
        self._amounts = values
        self._hash: int | None = None
        self._order: tuple[str, ...] | None = None

    # Mapping protocol -------------------------------------------------------------------
    def __getitem__(self, name: str) -> float:
        return self._amounts[name]

    def __iter__(self) -> Iterator[str]:
        if self._order is None:
            self._order = dimension_order(self._amounts)
        return iter(self._order)

    def __len__(self) -> int:
        return len(self._amounts)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Resource):
            return NotImplemented
        names = set(self._amounts) | set(other._amounts)
        return all(self.get(n, 0.0) == other.get(n, 0.0) for n in names)

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(tuple((n, a) for n, a in sorted(self._amounts.items()) if a != 0.0))
        return self._hash

    def __repr__(self) -> str:
        inner = ", ".join(f"{n}: {self._amounts[n]:g}" for n in self)
        return f"Resource({{{inner}}})"

    # Construction ----------------------------------------------------------------------
    @classmethod
    def empty(cls) -> Resource:
        """Return the empty resource (Volcano ``EmptyResource``)."""
        return cls()

    def amount(self, name: str) -> float:
        """Return the amount of a dimension, zero when absent (Volcano ``Get``)."""
        return self._amounts.get(name, 0.0)

    def names(self) -> tuple[str, ...]:
        """Return the dimensions present, canonical order (Volcano ``ResourceNames``)."""
        return tuple(self)

    def requested_names(self) -> tuple[str, ...]:
        """Return the dimensions with a positive amount."""
        return tuple(n for n in self if self._amounts[n] > 0)

    # Arithmetic ------------------------------------------------------------------------
    def __add__(self, other: Mapping[str, float]) -> Resource:
        out = dict(self._amounts)
        amounts = other._amounts if isinstance(other, Resource) else other
        for name, amount in amounts.items():
            out[name] = out.get(name, 0.0) + amount
        return Resource._raw(out)

    def __sub__(self, other: Mapping[str, float]) -> Resource:
        out = dict(self._amounts)
        amounts = other._amounts if isinstance(other, Resource) else other
        for name, amount in amounts.items():
            out[name] = out.get(name, 0.0) - amount
        return Resource._raw(out)

    @classmethod
    def _raw(cls, amounts: dict[str, float]) -> Resource:
        """Wrap amounts already clean (floats, no ``pods``, cpu and memory present)."""
        out = cls.__new__(cls)
        out._amounts = amounts
        out._hash = None
        out._order = None
        return out

    def multi(self, ratio: float) -> Resource:
        """Return every dimension multiplied by ``ratio`` (Volcano ``Multi``)."""
        return Resource({n: a * ratio for n, a in self._amounts.items()})

    def is_empty(self) -> bool:
        """Return whether every dimension is below ``MIN_RESOURCE`` (Volcano ``IsEmpty``)."""
        return all(a < MIN_RESOURCE for a in self._amounts.values())

    def is_zero(self, name: str) -> bool:
        """Return whether one dimension is below ``MIN_RESOURCE`` (Volcano ``IsZero``)."""
        return self.amount(name) < MIN_RESOURCE

    # Comparison ------------------------------------------------------------------------
    def less_equal(self, other: Resource, missing: Missing = Missing.ZERO) -> bool:
        """Return whether every dimension of ``self`` is at most ``other``'s, within 0.1.

        Port of ``Resource.LessEqual``: per dimension ``l < r || |l - r| < 0.1``; cpu and
        memory always compared, scalar dimensions of ``self`` compared against ``other``'s
        (absent ones count as 0 with ``Missing.ZERO``, as unlimited with ``INFINITY``).
        """
        for name, left in self._amounts.items():
            if name in other._amounts:
                right = other._amounts[name]
            elif name in (CPU, MEMORY):
                right = 0.0
            elif missing is Missing.INFINITY:
                continue
            else:
                if left <= MIN_RESOURCE:
                    continue
                right = 0.0
            if not (left < right or abs(left - right) < MIN_RESOURCE):
                return False
        return True

    def less_equal_on(self, other: Resource, dimensions: tuple[str, ...]) -> bool:
        """Return ``self[d] <= other[d]`` for each given dimension (plain comparison)."""
        return all(self.amount(d) <= other.amount(d) for d in dimensions)

    def insufficient(self, other: Resource) -> tuple[str, ...]:
        """Return the dimensions where ``self`` does not fit in ``other`` (LessEqual rule)."""
        out = []
        for name in self:
            left = self._amounts[name]
            if name not in (CPU, MEMORY) and left <= MIN_RESOURCE:
                continue
            right = other.amount(name)
            if not (left < right or abs(left - right) < MIN_RESOURCE):
                out.append(name)
        return tuple(out)

    def min_dimension(self, other: Resource, missing: Missing = Missing.ZERO) -> Resource:
        """Return ``min(self, other)`` per dimension of ``self`` (``MinDimensionResource``).

        A dimension absent in ``other`` is zero (``Missing.ZERO``) or left as is
        (``Missing.INFINITY``).
        """
        out: dict[str, float] = {}
        for name, left in self._amounts.items():
            if name in other._amounts or name in (CPU, MEMORY):
                out[name] = min(left, other.amount(name))
            elif missing is Missing.INFINITY:
                out[name] = left
            else:
                out[name] = 0.0
        return Resource(out)

    def maximum(self, other: Resource) -> Resource:
        """Return ``max(self, other)`` per dimension (helpers ``Max``)."""
        names = set(self._amounts) | set(other._amounts)
        return Resource({n: max(self.amount(n), other.amount(n)) for n in names})

    def diff(self, other: Resource) -> tuple[Resource, Resource]:
        """Return (the parts where self exceeds other, the parts where other exceeds self)."""
        names = set(self._amounts) | set(other._amounts)
        increased = {n: max(self.amount(n) - other.amount(n), 0.0) for n in names}
        decreased = {n: max(other.amount(n) - self.amount(n), 0.0) for n in names}
        return Resource(increased), Resource(decreased)

    def exceeded_part(self, other: Resource) -> Resource:
        """Return the part of ``self`` above ``other`` (``ExceededPart``; ``diff``'s first)."""
        mine, theirs = self._amounts, other._amounts
        out = {n: max(a - theirs.get(n, 0.0), 0.0) for n, a in mine.items()}
        for name, amount in theirs.items():
            if name not in out:
                out[name] = max(0.0 - amount, 0.0)
        return Resource._raw(out)  # both sides clean: so is every name and amount

    def as_dict(self) -> dict[str, float]:
        """Return the amounts as a plain dict in canonical order."""
        return {n: self._amounts[n] for n in self}


def share(allocated: float, deserved: float) -> float:
    """Return ``allocated / deserved``; 1 when nothing is deserved but something is used.

    Port of volcano ``api/helpers/helpers.go`` ``Share``.
    """
    if deserved == 0:
        return 0.0 if allocated == 0 else 1.0
    return allocated / deserved


def brief(resource: Resource, dimensions: Iterable[str]) -> str:
    """Render some dimensions of a resource shortly: ``cpu 7.2, memory 24Gi`` (cores, Gi)."""
    parts = []
    for name in dimensions:
        amount = resource.amount(name)
        text = show_amount(name, round(amount)) if math.isfinite(amount) else "unlimited"
        parts.append(f"{name} {text}")
    return ", ".join(parts) or "nothing"

"""Amounts as people read them: cpu in cores, memory in Gi. The one place for display units.

The topics hold exact base units (:mod:`vcbus.contracts.quantity`: milli-cpu, bytes); a
Kubernetes quantity such as ``31100m`` or ``329853488333`` is exact but unreadable in a
table. What ``get``, ``describe``, ``up``, the dashboard, ``simulate --html`` and the
scheduler's messages show goes through :func:`show_amount`:

- ``cpu`` and extended resources (``nvidia.com/gpu``), held in milli-units, in whole
  units with up to three decimals, trailing zeros dropped: ``31.1``, ``0.25``, ``64``;
- ``memory``, ``ephemeral-storage`` and ``storage``, held in bytes, in ``Gi`` with up to
  two decimals (``307.2Gi``, ``0.5Gi``); below 0.01 Gi in ``Mi`` (``1.5Mi``), and below
  a Mi in ``Ki`` or bytes, so a small amount never reads as ``0Gi``; nothing is ``0``;
- ``pods``: the count.

Machine-readable output (``-o json``, ``simulate --json``) keeps Kubernetes quantities.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import lru_cache

from vcbus.contracts.quantity import units_per_whole

BYTE_RESOURCES = frozenset({"memory", "ephemeral-storage", "storage"})
"""Resources held in bytes, shown in Gi."""

COUNT_RESOURCES = frozenset({"pods"})
"""Resources held as a count."""

GI = 1 << 30
MI = 1 << 20
KI = 1 << 10


def _decimal(value: float, digits: int) -> str:
    """``value`` with at most ``digits`` decimals, trailing zeros (and a lone dot) dropped."""
    text = f"{value:.{digits}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def show_bytes(amount: float) -> str:
    """Bytes in Gi (``307.2Gi``), or Mi, Ki, bytes for amounts below 0.01 Gi."""
    size = abs(amount)
    if amount == 0:
        return "0"
    if size >= GI / 100:
        return f"{_decimal(amount / GI, 2)}Gi"
    if size >= MI:
        return f"{_decimal(amount / MI, 1)}Mi"
    if size >= KI:
        return f"{_decimal(amount / KI, 1)}Ki"
    return f"{_decimal(amount, 0)}"


@lru_cache(maxsize=4096)
def show_amount(name: str, amount: float) -> str:
    """A base-unit amount of resource ``name`` as people read it (module docstring).

    Kept for the last 4,096 amounts asked: a scheduler's messages show the same few
    amounts in every cycle.
    """
    if name in BYTE_RESOURCES:
        return show_bytes(amount)
    if name in COUNT_RESOURCES:
        return _decimal(amount, 0)
    return _decimal(amount / units_per_whole(name), 3)


def unit_of(name: str) -> str:
    """The unit a resource's amounts are shown in, for a heading: ``cores``, ``Gi``, ``""``."""
    if name in BYTE_RESOURCES:
        return "Gi"
    if name == "cpu":
        return "cores"
    return ""


def show_used(name: str, used: float, total: float) -> str:
    """``31.1 / 64 cores``, ``12.5Gi / 256Gi``, ``12 / 110 pods``: an amount of a total."""
    if name == "cpu":
        return f"{show_amount(name, used)} / {show_amount(name, total)} cores"
    if name in COUNT_RESOURCES:
        return f"{show_amount(name, used)} / {show_amount(name, total)} {name}"
    return f"{show_amount(name, used)} / {show_amount(name, total)}"


def show_resources(amounts: Mapping[str, float], names: Iterable[str] = ()) -> str:
    """``cpu=2,memory=4Gi``: the amounts (of ``names`` when given, else all but pods)."""
    shown = tuple(names) or tuple(sorted(n for n in amounts if n not in COUNT_RESOURCES))
    return ",".join(f"{n}={show_amount(n, amounts.get(n, 0))}" for n in shown) or "-"

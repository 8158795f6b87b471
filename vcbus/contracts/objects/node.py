"""Nodes of the (simulated) cluster."""

from __future__ import annotations

import msgspec

from vcbus.contracts.quantity import Resources


class Taint(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A node taint."""

    key: str
    value: str = ""
    effect: str = "NoSchedule"


class Node(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """A node: what it can hold (``pods`` included) and how it is labelled."""

    name: str
    allocatable: Resources = {}
    labels: dict[str, str] = {}
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False

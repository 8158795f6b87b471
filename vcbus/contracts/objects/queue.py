"""Queues (Volcano ``scheduling.volcano.sh/v1beta1`` Queue, flattened)."""

from __future__ import annotations

import enum

import msgspec

from vcbus.contracts.quantity import Resources

DEFAULT_QUEUE = "default"
ROOT_QUEUE = "root"


class QueueState(enum.StrEnum):
    """Queue states."""

    OPEN = "Open"
    CLOSED = "Closed"
    CLOSING = "Closing"
    UNKNOWN = "Unknown"


class Queue(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """A queue: weight for fair share, optional capability and guarantee, a parent."""

    name: str
    weight: int = 1
    capability: Resources = {}
    guarantee: Resources = {}
    state: QueueState = QueueState.OPEN
    parent: str = ""
    priority: int = 0
    reclaimable: bool = True

"""Kubernetes object metadata and conditions, shared by the resource types."""

from __future__ import annotations

from datetime import datetime

import msgspec


class ObjectMeta(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """The part of Kubernetes ``metadata`` vcbus reads; other fields are ignored."""

    name: str = ""
    namespace: str = ""
    generate_name: str = ""
    uid: str = ""
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    creation_timestamp: datetime | None = None


class Condition(msgspec.Struct, frozen=True, kw_only=True, rename="camel", omit_defaults=True):
    """A status condition with a machine-readable reason code (docs/design.md#pending-reasons)."""

    type: str
    status: str = "True"
    reason: str = ""
    message: str = ""

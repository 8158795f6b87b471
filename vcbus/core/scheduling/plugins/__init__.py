"""The plugin table: configuration name → builder (explicit, no import-time registration).

``overcommit`` and ``reservation`` serve podgroup-enqueue's actions; the rest serve both.
"""

from __future__ import annotations

from collections.abc import Mapping

from vcbus.core.scheduling.framework.session import PluginBuilder
from vcbus.core.scheduling.plugins import (
    aging,
    binpack,
    conformance,
    drf,
    gang,
    nodeorder,
    overcommit,
    predicates,
    priority,
    proportion,
    reservation,
)

PLUGIN_BUILDERS: Mapping[str, PluginBuilder] = {
    aging.NAME: aging.new,
    binpack.NAME: binpack.new,
    conformance.NAME: conformance.new,
    drf.NAME: drf.new,
    gang.NAME: gang.new,
    nodeorder.NAME: nodeorder.new,
    overcommit.NAME: overcommit.new,
    predicates.NAME: predicates.new,
    priority.NAME: priority.new,
    proportion.NAME: proportion.new,
    reservation.NAME: reservation.new,
}

__all__ = ["PLUGIN_BUILDERS"]

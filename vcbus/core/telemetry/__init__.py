"""Metrics of the services: OpenTelemetry instruments, exposed in Prometheus's text format."""

from vcbus.core.telemetry.exposition import CONTENT_TYPE, Family, prometheus_name, render
from vcbus.core.telemetry.metrics import (
    FAMILIES,
    NullMetrics,
    PendingPodGroups,
    RuntimeMetrics,
    ServiceMetrics,
)

__all__ = [
    "CONTENT_TYPE",
    "FAMILIES",
    "Family",
    "NullMetrics",
    "PendingPodGroups",
    "RuntimeMetrics",
    "ServiceMetrics",
    "prometheus_name",
    "render",
]

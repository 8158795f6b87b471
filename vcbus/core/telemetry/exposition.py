"""The Prometheus text exposition format (0.0.4), rendered from an OpenTelemetry collection.

Names follow OpenTelemetry's Prometheus compatibility rules: characters outside
``[a-zA-Z0-9_:]`` become ``_``, the unit is appended as a word (``s`` → ``_seconds``), and
monotonic sums get ``_total``. Histogram buckets are made cumulative, with ``+Inf`` last.
The resource's ``service.name`` and ``service.instance.id`` are given once, on
``target_info``. Families declared but not measured yet are listed with their ``HELP`` and
``TYPE`` and no samples, so a scrape always shows every metric a service has.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from opentelemetry.sdk.metrics.export import (
    Gauge,
    Histogram,
    HistogramDataPoint,
    Metric,
    MetricsData,
    NumberDataPoint,
    Sum,
)
from opentelemetry.util.types import Attributes

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
"""The ``Content-Type`` of a scrape answer."""

_UNIT_WORDS = {"s": "seconds", "ms": "milliseconds", "By": "bytes", "1": "ratio"}
_INVALID = re.compile(r"[^a-zA-Z0-9_:]")
_TARGET_LABELS = (("service.name", "service_name"), ("service.instance.id", "service_instance_id"))


@dataclass(frozen=True, slots=True)
class Family:
    """A metric family as declared: its OpenTelemetry instrument and how Prometheus sees it."""

    name: str
    """The instrument name (``vcbus.cycle.duration``)."""
    kind: str
    """``counter``, ``gauge`` or ``histogram``."""
    help: str
    unit: str = ""

    @property
    def prometheus_name(self) -> str:
        """The exposed name (``vcbus_cycle_duration_seconds``, ``vcbus_bindings_total``)."""
        return prometheus_name(self.name, self.unit, counter=self.kind == "counter")


def prometheus_name(name: str, unit: str, *, counter: bool) -> str:
    """Return the Prometheus name of an instrument.

    Args:
        name: the OpenTelemetry instrument name.
        unit: its unit (UCUM); units in braces (``{record}``) are annotations and dropped.
        counter: whether it is a monotonic sum (``_total`` is appended).

    Returns:
        A valid Prometheus metric name.
    """
    out = _INVALID.sub("_", name)
    word = "" if unit.startswith("{") else _UNIT_WORDS.get(unit, _INVALID.sub("_", unit))
    if word and not out.endswith(f"_{word}"):
        out = f"{out}_{word}"
    if counter and not out.endswith("_total"):
        out = f"{out}_total"
    return out


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(attributes: Attributes, extra: Sequence[tuple[str, str]] = ()) -> str:
    pairs = [(_INVALID.sub("_", str(k)), str(v)) for k, v in sorted((attributes or {}).items())]
    pairs.extend(extra)
    if not pairs:
        return ""
    return "{" + ",".join(f'{key}="{_escape(value)}"' for key, value in pairs) + "}"


def _number(value: float) -> str:
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


def _samples(name: str, metric: Metric) -> list[str]:
    data = metric.data
    lines: list[str] = []
    if isinstance(data, Sum | Gauge):
        points: Sequence[NumberDataPoint] = data.data_points
        lines.extend(f"{name}{_labels(p.attributes)} {_number(p.value)}" for p in points)
    elif isinstance(data, Histogram):
        histogram_points: Sequence[HistogramDataPoint] = data.data_points
        for point in histogram_points:
            running = 0
            bounds = [*(_number(b) for b in point.explicit_bounds), "+Inf"]
            for bound, count in zip(bounds, point.bucket_counts, strict=False):
                running += count
                labels = _labels(point.attributes, (("le", bound),))
                lines.append(f"{name}_bucket{labels} {running}")
            lines.append(f"{name}_sum{_labels(point.attributes)} {_number(point.sum)}")
            lines.append(f"{name}_count{_labels(point.attributes)} {point.count}")
    return lines


def _collected(data: MetricsData | None) -> tuple[dict[str, Metric], Mapping[str, object]]:
    metrics: dict[str, Metric] = {}
    resource: Mapping[str, object] = {}
    if data is None:
        return metrics, resource
    for resource_metrics in data.resource_metrics:
        resource = resource_metrics.resource.attributes
        for scope in resource_metrics.scope_metrics:
            for metric in scope.metrics:
                metrics[metric.name] = metric
    return metrics, resource


def render(data: MetricsData | None, families: Iterable[Family]) -> str:
    """Render a collection as the Prometheus text format.

    Args:
        data: what a metric reader collected (``None`` when nothing was).
        families: every family the service declares, in the order to list them.

    Returns:
        The exposition text, ending with a newline.
    """
    metrics, resource = _collected(data)
    lines: list[str] = []
    target = [(label, str(resource[key])) for key, label in _TARGET_LABELS if key in resource]
    if target:
        lines += [
            "# HELP target_info Target metadata",
            "# TYPE target_info gauge",
            f"target_info{_labels({}, target)} 1",
        ]
    for family in families:
        name = family.prometheus_name
        lines.append(f"# HELP {name} {_escape(family.help)}")
        lines.append(f"# TYPE {name} {family.kind}")
        metric = metrics.get(family.name)
        if metric is not None:
            lines.extend(_samples(name, metric))
    return "\n".join(lines) + "\n"

"""Typed reads of a pod template ``spec`` kept as a mapping.

Each reader returns what it can read and ignores what it cannot: admission reports the
bad values (``vcbus.services.admission.rules``), so by the time another stage reads a spec it
has been checked.
"""

from __future__ import annotations

from collections.abc import Mapping

from vcbus.contracts.quantity import QuantityError, Resources, add, to_base_units


def _mapping(value: object) -> Mapping[str, object]:
    return value if isinstance(value, Mapping) else {}


def _containers(spec: Mapping[str, object], field: str) -> list[Mapping[str, object]]:
    value = spec.get(field)
    if not isinstance(value, list):
        return []
    return [item for item in value if isinstance(item, Mapping)]


def _container_requests(container: Mapping[str, object]) -> Resources:
    resources = _mapping(container.get("resources"))
    requests = _mapping(resources.get("requests")) or _mapping(resources.get("limits"))
    out: Resources = {}
    for name in sorted(requests):
        raw = requests[name]
        if name.startswith(("count/", "requests.", "limits.")):
            continue
        if not isinstance(raw, str | int | float) or isinstance(raw, bool):
            continue
        try:
            out[name] = to_base_units(name, raw)
        except QuantityError:
            continue
    return out


def pod_requests(spec: Mapping[str, object]) -> Resources:
    """Return a pod's resource requests: ``max(Σ containers, max init container)``.

    Port of Kubernetes' pod request computation used by Volcano
    (``resource_info.go`` ``GetPodResourceRequest``). A container without requests uses
    its limits, as the API server defaults requests from limits.
    """
    total: Resources = {}
    for container in _containers(spec, "containers"):
        total = add(total, _container_requests(container))
    for container in _containers(spec, "initContainers"):
        for name, amount in _container_requests(container).items():
            total[name] = max(total.get(name, 0), amount)
    return {name: total[name] for name in sorted(total)}


def node_selector(spec: Mapping[str, object]) -> dict[str, str]:
    """Return the pod's ``nodeSelector`` (string values only)."""
    return {
        k: v for k, v in sorted(_mapping(spec.get("nodeSelector")).items()) if isinstance(v, str)
    }


def string_field(spec: Mapping[str, object], field: str) -> str:
    """Return a string field of the spec, or ``""``."""
    value = spec.get(field)
    return value if isinstance(value, str) else ""


def int_field(spec: Mapping[str, object], field: str) -> int | None:
    """Return an integer field of the spec, or ``None``."""
    value = spec.get(field)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def tolerations(spec: Mapping[str, object]) -> tuple[dict[str, str], ...]:
    """Return the pod's tolerations as ``{key, operator, value, effect}`` string maps."""
    value = spec.get("tolerations")
    if not isinstance(value, list):
        return ()
    out = []
    for item in value:
        if isinstance(item, Mapping):
            out.append({k: str(v) for k, v in sorted(item.items()) if isinstance(v, str | int)})
    return tuple(out)

"""Checks of a task's pod template (Volcano's admit_job.go T7–T9) and of its resource quantities.

Volcano v1.12 ``pkg/webhooks/admission/jobs/validate/admit_job.go`` runs Kubernetes'
whole ``ValidatePodTemplate`` (T8), checks the generated pod name (T7,
``validateK8sPodNameLength``) and, for a task with a ``topologyPolicy``, that the pod is
Guaranteed and asks for whole CPUs (T9, ``validateTaskTopoPolicy``).

vcbus keeps the pod spec as a mapping and checks the part of ``ValidatePodTemplate`` a
scheduler depends on, with Kubernetes' field-error texts prefixed by ``spec.task[<i>].``
as Volcano prints them: containers present, each with a DNS-1123 name (unique across
init and regular containers) and an image; ``restartPolicy`` one of Always, OnFailure,
Never; every request and limit a valid, non-negative quantity (each bad one its own
violation), requests not above limits.

Deviations: T7 checks the longest pod name a task creates, ``<job>-<task>-<replicas−1>``
(Volcano checks ``<job>-<task>-<task index>``, which misses names that only overflow at
high replica indices). The rest of ``ValidatePodTemplate`` (volumes, probes, security
contexts …) is not ported: the simulated cluster does not use it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from decimal import Decimal

from vcbus.contracts.events.jobs_rejected import Violation
from vcbus.contracts.objects.job import TaskSpec
from vcbus.contracts.quantity import QuantityError, parse_quantity, to_base_units
from vcbus.services.admission.names import dns1123_label_errors, go_list, qualified_name_errors

RESTART_POLICIES: tuple[str, ...] = ("Always", "Never", "OnFailure")
TOPOLOGY_POLICY_NONE = "none"
_QOS_RESOURCES: tuple[str, ...] = ("cpu", "memory")


def validate_pod_name(job_name: str, task: TaskSpec, index: int) -> Iterator[Violation]:
    """T7: the longest pod name the task generates must be a qualified name."""
    pod_name = f"{job_name}-{task.name}-{max(task.replicas - 1, 0)}"
    errors = qualified_name_errors(pod_name)
    if errors:
        yield Violation(
            path=f"spec.tasks[{index}].name",
            reason="InvalidPodName",
            message=f"create pod with name {pod_name} validate failed {go_list(errors)}",
        )


def validate_template(task: TaskSpec, index: int) -> Iterator[Violation]:
    """T8 (the part ported) and resource quantities of one task's pod template."""
    spec = task.template.spec
    prefix = f"spec.tasks[{index}].template.spec"
    shown = f"spec.task[{index}].template.spec"
    containers = spec.get("containers")
    if containers is None or containers == []:
        yield _field(prefix, shown, "containers", "Required", "Required value")
    names: set[str] = set()
    for field in ("initContainers", "containers"):
        value = spec.get(field)
        if value is None:
            continue
        if not isinstance(value, list):
            yield _field(prefix, shown, field, "InvalidType", "Invalid value: must be a list")
            continue
        for position, container in enumerate(value):
            yield from _container(container, f"{field}[{position}]", prefix, shown, names)
    restart_policy = spec.get("restartPolicy")
    if restart_policy is not None and restart_policy not in RESTART_POLICIES:
        supported = ", ".join(f'"{policy}"' for policy in RESTART_POLICIES)
        yield _field(
            prefix,
            shown,
            "restartPolicy",
            "InvalidRestartPolicy",
            f'Unsupported value: "{restart_policy}": supported values: {supported}',
        )


def validate_topology(task: TaskSpec, index: int) -> Iterator[Violation]:
    """T9: with a ``topologyPolicy``, pods must be Guaranteed and ask for whole CPUs."""
    if task.topology_policy in {"", TOPOLOGY_POLICY_NONE}:
        return
    containers: list[Mapping[object, object]] = []
    for field in ("containers", "initContainers"):
        value = task.template.spec.get(field)
        if isinstance(value, list):
            containers.extend(item for item in value if isinstance(item, Mapping))
    resources = [_requests_and_limits(container) for container in containers]
    if not _is_guaranteed(resources):
        qos = "BestEffort" if _is_best_effort(resources) else "Burstable"
        yield Violation(
            path=f"spec.tasks[{index}].template.spec",
            reason="NotGuaranteedPod",
            message=f"spec.task[{index}] isn't Guaranteed pod, kind={qos}",
        )
        return
    for position, (requests, _) in enumerate(resources):
        cpu = requests.get("cpu")
        if cpu is None or cpu != cpu.to_integral_value() or cpu == 0:
            yield Violation(
                path=f"spec.tasks[{index}].template.spec",
                reason="NonIntegerCpuRequest",
                message=(
                    f"the cpu request isn't an integer in spec.task[{index}] container[{position}]."
                ),
            )


def _field(prefix: str, shown: str, field: str, reason: str, text: str) -> Violation:
    return Violation(path=f"{prefix}.{field}", reason=reason, message=f"{shown}.{field}: {text}")


def _container(
    container: object, where: str, prefix: str, shown: str, names: set[str]
) -> Iterator[Violation]:
    if not isinstance(container, Mapping):
        yield _field(prefix, shown, where, "InvalidType", "Invalid value: must be a mapping")
        return
    name = container.get("name")
    if not name:
        yield _field(prefix, shown, f"{where}.name", "MissingContainerName", "Required value")
    elif not isinstance(name, str):
        yield _field(
            prefix, shown, f"{where}.name", "InvalidType", "Invalid value: must be a string"
        )
    else:
        errors = dns1123_label_errors(name)
        if errors:
            yield _field(
                prefix,
                shown,
                f"{where}.name",
                "InvalidContainerName",
                f'Invalid value: "{name}": {"; ".join(errors)}',
            )
        elif name in names:
            yield _field(
                prefix,
                shown,
                f"{where}.name",
                "DuplicateContainerName",
                f'Duplicate value: "{name}"',
            )
        names.add(name)
    if not container.get("image"):
        yield _field(prefix, shown, f"{where}.image", "MissingImage", "Required value")
    yield from _resources(container.get("resources"), f"{where}.resources", prefix, shown)


def _resources(resources: object, where: str, prefix: str, shown: str) -> Iterator[Violation]:
    if resources is None:
        return
    if not isinstance(resources, Mapping):
        yield _field(prefix, shown, where, "InvalidType", "Invalid value: must be a mapping")
        return
    parsed: dict[str, dict[str, Decimal]] = {}
    for kind in ("requests", "limits"):
        values = resources.get(kind)
        parsed[kind] = {}
        if values is None:
            continue
        if not isinstance(values, Mapping):
            yield _field(
                prefix, shown, f"{where}.{kind}", "InvalidType", "Invalid value: must be a mapping"
            )
            continue
        for name, raw in values.items():
            field = f"{where}.{kind}.{name}"
            quantity = _quantity(raw, str(name))
            if isinstance(quantity, str):
                yield _field(
                    prefix, shown, field, "InvalidQuantity", f'Invalid value: "{raw}": {quantity}'
                )
            elif quantity < 0:
                yield _field(
                    prefix,
                    shown,
                    field,
                    "NegativeQuantity",
                    f'Invalid value: "{raw}": must be greater than or equal to 0',
                )
            else:
                parsed[kind][str(name)] = quantity
    for name in sorted(parsed["requests"]):
        request = parsed["requests"][name]
        limit = parsed["limits"].get(name)
        if limit is not None and request > limit:
            raw_request = _raw(resources, "requests", name)
            raw_limit = _raw(resources, "limits", name)
            yield _field(
                prefix,
                shown,
                f"{where}.requests.{name}",
                "RequestExceedsLimit",
                f'Invalid value: "{raw_request}": '
                f"must be less than or equal to {name} limit of {raw_limit}",
            )


def _raw(resources: Mapping[object, object], kind: str, name: str) -> object:
    values = resources.get(kind)
    return values.get(name) if isinstance(values, Mapping) else None


def _quantity(raw: object, name: str) -> Decimal | str:
    """Parse a quantity of resource ``name``, or return why it is not one.

    A quantity larger than Kubernetes allows (2^63-1 in the resource's base unit) is
    not one: further down it would not fit the services' numbers or their state.
    """
    if isinstance(raw, bool) or not isinstance(raw, str | int | float):
        return "quantities must be a string or a number"
    try:
        quantity = parse_quantity(raw)
        to_base_units(name, raw)
    except QuantityError as exc:
        return str(exc)
    return quantity


def _requests_and_limits(
    container: Mapping[object, object],
) -> tuple[dict[str, Decimal], dict[str, Decimal]]:
    """Requests (defaulted from limits when none are given, as Volcano does) and limits."""
    resources = container.get("resources")
    out: list[dict[str, Decimal]] = []
    for kind in ("requests", "limits"):
        values = resources.get(kind) if isinstance(resources, Mapping) else None
        parsed: dict[str, Decimal] = {}
        if isinstance(values, Mapping):
            for name, raw in values.items():
                quantity = _quantity(raw, str(name))
                if isinstance(quantity, Decimal):
                    parsed[str(name)] = quantity
        out.append(parsed)
    requests, limits = out
    return (requests or dict(limits)), limits


def _is_guaranteed(resources: list[tuple[dict[str, Decimal], dict[str, Decimal]]]) -> bool:
    """Kubernetes ``GetPodQOS`` == Guaranteed: cpu and memory limits set and equal to requests."""
    if not resources:
        return False
    for requests, limits in resources:
        for name in _QOS_RESOURCES:
            limit = limits.get(name)
            if limit is None or limit == 0:
                return False
            if requests.get(name, limit) != limit:
                return False
    return True


def _is_best_effort(resources: list[tuple[dict[str, Decimal], dict[str, Decimal]]]) -> bool:
    """Kubernetes ``GetPodQOS`` == BestEffort: no cpu or memory request or limit anywhere."""
    return not any(
        values.get(name, 0) != 0
        for requests, limits in resources
        for values in (requests, limits)
        for name in _QOS_RESOURCES
    )

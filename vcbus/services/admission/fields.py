"""Strict field validation: the fields of a submitted Job that no schema knows.

kubectl refuses a manifest with a field its schema does not have (server-side field
validation, ``fieldValidation=Strict``, the default of ``kubectl apply/create`` since
Kubernetes 1.27) with ``unknown field "spec.tasks[0].replica"``. Without it a typo is
dropped in silence: ``replica: 4`` gives a task of 0 pods, ``queu:`` the default queue.

The schema is the Job contract itself (:mod:`vcbus.contracts.objects.job`, every field vcbus
models, read from its msgspec types), plus the Kubernetes objects the contract keeps as
written or models in part: ``metadata`` (``ObjectMeta``), a template's pod ``spec``
(``PodSpec``), its containers (``Container``), their ``env``, ``ports`` and ``resources``.
Those lists are Kubernetes' ``k8s.io/api/core/v1/types.go`` and
``k8s.io/apimachinery/pkg/apis/meta/v1/types.go`` (v1.34). Maps whose keys are the user's
(labels, annotations, ``plugins``, ``nodeSelector``, quantities) and objects vcbus does not
read further (affinity, volumes, probes, a job's ``status``) are not looked into, as a
schema with ``x-kubernetes-preserve-unknown-fields`` would not be.

Pure: a document in, the unknown fields out, each with its path and the closest known name.
"""

from __future__ import annotations

import difflib
import enum
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache

import msgspec

from vcbus.contracts.objects.job import Job


class FieldValidation(enum.StrEnum):
    """What admission does with unknown fields: Kubernetes' ``fieldValidation`` values."""

    STRICT = "Strict"
    """Refuse the job, every unknown field a violation (the default)."""
    WARN = "Warn"
    """Admit the job without the unknown fields; the client warns about each."""
    IGNORE = "Ignore"
    """Admit the job without the unknown fields, silently."""


FIELD_VALIDATION_HEADER = "field-validation"
"""The ``jobs.submitted`` record header that carries a submission's :class:`FieldValidation`
(``Strict`` when absent or not one of the three)."""


def field_validation_of(value: bytes | str | None) -> FieldValidation:
    """The mode a header value names; anything else is ``Strict``, the safe default."""
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
    for mode in FieldValidation:
        if text is not None and text.strip().lower() == mode.value.lower():
            return mode
    return FieldValidation.STRICT


@dataclass(frozen=True, slots=True)
class Shape:
    """The fields an object may have, and the shapes of the objects (or list items) below."""

    known: frozenset[str]
    below: Mapping[str, Shape] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class UnknownField:
    """A field no schema knows, at ``path`` (``spec.tasks[0].replica``)."""

    path: str
    closest: str | None

    @property
    def message(self) -> str:
        """Kubectl's wording, with the known name closest to the typo when there is one."""
        hint = f'; did you mean "{self.closest}"?' if self.closest else ""
        return f'unknown field "{self.path}"{hint}'


_ENV_VAR = Shape(frozenset({"name", "value", "valueFrom"}))
_CONTAINER_PORT = Shape(frozenset({"name", "hostPort", "containerPort", "protocol", "hostIP"}))
_RESOURCES = Shape(frozenset({"limits", "requests", "claims"}))
_CONTAINER = Shape(
    frozenset(
        {
            "name", "image", "command", "args", "workingDir", "ports", "envFrom", "env",
            "resources", "resizePolicy", "restartPolicy", "restartPolicyRules",
            "volumeMounts", "volumeDevices", "livenessProbe", "readinessProbe",
            "startupProbe", "lifecycle", "terminationMessagePath", "terminationMessagePolicy",
            "imagePullPolicy", "securityContext", "stdin", "stdinOnce", "tty",
        }
    ),
    {"env": _ENV_VAR, "ports": _CONTAINER_PORT, "resources": _RESOURCES},
)  # fmt: skip
_POD_SPEC = Shape(
    frozenset(
        {
            "volumes", "initContainers", "containers", "ephemeralContainers", "restartPolicy",
            "terminationGracePeriodSeconds", "activeDeadlineSeconds", "dnsPolicy",
            "nodeSelector", "serviceAccountName", "serviceAccount",
            "automountServiceAccountToken", "nodeName", "hostNetwork", "hostPID", "hostIPC",
            "shareProcessNamespace", "securityContext", "imagePullSecrets", "hostname",
            "subdomain", "affinity", "schedulerName", "tolerations", "hostAliases",
            "priorityClassName", "priority", "dnsConfig", "readinessGates",
            "runtimeClassName", "enableServiceLinks", "preemptionPolicy", "overhead",
            "topologySpreadConstraints", "setHostnameAsFQDN", "os", "hostUsers",
            "schedulingGates", "resourceClaims", "resources", "hostnameOverride",
        }
    ),
    {"containers": _CONTAINER, "initContainers": _CONTAINER, "resources": _RESOURCES},
)  # fmt: skip
_OBJECT_META = Shape(
    frozenset(
        {
            "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion",
            "generation", "creationTimestamp", "deletionTimestamp",
            "deletionGracePeriodSeconds", "labels", "annotations", "ownerReferences",
            "finalizers", "managedFields",
        }
    )
)  # fmt: skip
_KUBERNETES_SHAPES: Mapping[str, Shape] = {
    "ObjectMeta": _OBJECT_META,
    "PodTemplate.spec": _POD_SPEC,
}
"""Objects the contract models in part or keeps as written, by struct (or struct.field)."""

_EXTRA_FIELDS: Mapping[str, frozenset[str]] = {"Job": frozenset({"status"})}
"""Fields Volcano's types have that the contract does not read (a Job's ``status``)."""


def _struct_of(info: msgspec.inspect.Type) -> msgspec.inspect.StructType | None:
    """The struct a field holds: itself, the items of a tuple or list, or one of a union."""
    match info:
        case msgspec.inspect.StructType():
            return info
        case msgspec.inspect.VarTupleType() | msgspec.inspect.ListType():
            return _struct_of(info.item_type)
        case msgspec.inspect.UnionType():
            for member in info.types:
                found = _struct_of(member)
                if found is not None:
                    return found
    return None


def _shape(info: msgspec.inspect.StructType) -> Shape:
    name = info.cls.__name__
    if name in _KUBERNETES_SHAPES:
        return _KUBERNETES_SHAPES[name]
    below: dict[str, Shape] = {}
    for item in info.fields:
        kubernetes = _KUBERNETES_SHAPES.get(f"{name}.{item.name}")
        nested = _struct_of(item.type)
        if kubernetes is not None:
            below[item.encode_name] = kubernetes
        elif nested is not None:
            below[item.encode_name] = _shape(nested)
    known = frozenset(item.encode_name for item in info.fields)
    return Shape(known | _EXTRA_FIELDS.get(name, frozenset()), below)


@cache
def job_shape() -> Shape:
    """The shape of a ``batch.volcano.sh/v1alpha1`` Job, read once from the contract."""
    info = msgspec.inspect.type_info(Job)
    assert isinstance(info, msgspec.inspect.StructType)
    return _shape(info)


def unknown_fields(document: object, shape: Shape | None = None) -> tuple[UnknownField, ...]:
    """Every field of ``document`` that ``shape`` (a Job's by default) does not know.

    Args:
        document: the parsed submission (mappings, lists and scalars).
        shape: the schema to hold it against; the Job's when omitted.

    Returns:
        The unknown fields in document order, each with its JSON path and closest known name.
    """
    return tuple(_walk(document, shape or job_shape(), ""))


def known_only(document: object, shape: Shape | None = None) -> object:
    """``document`` without the fields ``shape`` (a Job's by default) does not know.

    What Kubernetes stores under ``Warn`` and ``Ignore``: unknown fields are dropped,
    known ones kept as written, at every depth the schema looks into.
    """
    return _pruned(document, shape or job_shape())


def _pruned(value: object, shape: Shape) -> object:
    if isinstance(value, list):
        return [_pruned(item, shape) for item in value]
    if not isinstance(value, Mapping):
        return value
    return {
        key: _pruned(item, shape.below[key]) if key in shape.below else item
        for key, item in value.items()
        if key in shape.known
    }


def _walk(value: object, shape: Shape, path: str) -> Iterator[UnknownField]:
    if isinstance(value, list):
        for index, item in enumerate(value):
            yield from _walk(item, shape, f"{path}[{index}]")
        return
    if not isinstance(value, Mapping):
        return
    for key, item in value.items():
        if not isinstance(key, str):
            continue  # decoding reports keys that are not strings
        here = f"{path}.{key}" if path else key
        if key not in shape.known:
            close = difflib.get_close_matches(key, sorted(shape.known), n=1, cutoff=0.6)
            yield UnknownField(here, close[0] if close else None)
        elif key in shape.below:
            yield from _walk(item, shape.below[key], here)

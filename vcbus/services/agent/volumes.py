"""A pod's volumes as a node provides them: ``emptyDir`` and ``hostPath``, where mounted.

Pure. :func:`pod_volumes` reads the task template's ``volumes`` (as Volcano writes them:
each ``{"name": …, "<kind>": {…}}``) and :func:`container_mounts` a container's
``volumeMounts`` (``name``, ``mountPath``, ``readOnly``), for a container runtime:

- ``emptyDir``: a directory of the pod's own, made when the pod starts and removed with it;
  ``medium: Memory`` makes it a tmpfs of its ``sizeLimit`` (else of the pod's memory
  limit, else tmpfs's own default: half the host's memory);
- ``hostPath``: the host's path as the host resolved it (``realpath``, checked against the
  agent's ``--host-path-allow`` prefixes before this is read); its ``type`` is not checked
  (a path that is not there fails the container's start);
- any other kind (``persistentVolumeClaim``, ``configMap``, ``secret``, …) and the job's
  own ``spec.volumes`` (Volcano makes each a claim) fail the pod,
  :data:`REASON_VOLUME_UNSUPPORTED`, naming the volume: no node here has an API server
  to read them from;
- a mount naming no volume of the pod, a ``mountPath`` that is not absolute or holds
  ``:`` or ``,``, a ``subPath``: :data:`REASON_INVALID_SPEC` or
  :data:`REASON_VOLUME_UNSUPPORTED`, naming the container and the mount.

Host processes mount nothing (they see the host's files): there the kinds are checked the
same way, and nothing else is done (docs/real-jobs.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from vcbus.contracts import reasons as codes
from vcbus.contracts.objects.job import VolumeSpec
from vcbus.contracts.quantity import MEMORY, QuantityError, to_base_units
from vcbus.services.agent.model import EMPTY_DIR, HOST_PATH, MountRun, VolumeRun
from vcbus.services.agent.validate import label_error

REASON_VOLUME_UNSUPPORTED = codes.REASON_VOLUME_UNSUPPORTED
REASON_INVALID_SPEC = codes.REASON_INVALID_SPEC
KINDS = (EMPTY_DIR, HOST_PATH)


class VolumeError(ValueError):
    """A volume or a mount a node cannot provide: ``reason`` is the pod's status reason."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def pod_volumes(
    spec: Mapping[str, object],
    job_volumes: Sequence[VolumeSpec],
    resolved: Mapping[str, str],
) -> tuple[VolumeRun, ...]:
    """The pod's volumes; ``resolved``: each ``hostPath`` as the host resolves it.

    Raises:
        VolumeError: a volume of a kind not provided here, or one out of its format.
    """
    for claim in job_volumes:
        name = claim.volume_claim_name or claim.mount_path
        raise VolumeError(
            REASON_VOLUME_UNSUPPORTED,
            f"volume {name} (the job's spec.volumes, a persistentVolumeClaim at "
            f"{claim.mount_path}) is not supported on this node: {_offered()}",
        )
    out: list[VolumeRun] = []
    seen: set[str] = set()
    for item in _list(spec.get("volumes")):
        volume = item if isinstance(item, Mapping) else {}
        given = volume.get("name")
        problem = label_error("volume name", given)
        if problem:
            raise VolumeError(REASON_INVALID_SPEC, problem)
        name = str(given)
        if name in seen:
            raise VolumeError(REASON_INVALID_SPEC, f"volume name {name!r} is used twice")
        seen.add(name)
        kinds = sorted(key for key in volume if key != "name")
        if len(kinds) != 1 or kinds[0] not in KINDS:
            what = ", ".join(kinds) or "no source"
            raise VolumeError(
                REASON_VOLUME_UNSUPPORTED,
                f"volume {name} ({what}) is not supported on this node: {_offered()}",
            )
        source = _mapping(volume.get(kinds[0]))
        if kinds[0] == HOST_PATH:
            path = source.get("path")
            if not isinstance(path, str) or not path.startswith("/"):
                raise VolumeError(
                    REASON_INVALID_SPEC, f"volume {name}: hostPath.path {path!r} is not absolute"
                )
            real = resolved.get(path, path)
            if _unsafe(real):
                raise VolumeError(
                    REASON_VOLUME_UNSUPPORTED, f"volume {name}: hostPath {real!r} holds ':' or ','"
                )
            out.append(VolumeRun(name=name, kind=HOST_PATH, host_path=real))
            continue
        medium = source.get("medium") or ""
        if medium not in ("", "Memory"):
            raise VolumeError(
                REASON_VOLUME_UNSUPPORTED,
                f"volume {name} (emptyDir of medium {medium!r}) is not supported: '' or Memory",
            )
        out.append(
            VolumeRun(
                name=name,
                kind=EMPTY_DIR,
                memory=medium == "Memory",
                size_bytes=_size(name, source.get("sizeLimit")),
            )
        )
    return tuple(out)


def container_mounts(
    container: Mapping[str, object], volumes: Sequence[VolumeRun]
) -> tuple[MountRun, ...]:
    """Where the container mounts the pod's volumes.

    Raises:
        VolumeError: a mount of no volume of the pod, or one not provided here.
    """
    names = {volume.name for volume in volumes}
    who = f"container {container.get('name')}"
    out: list[MountRun] = []
    paths: set[str] = set()
    for item in _list(container.get("volumeMounts")):
        mount = item if isinstance(item, Mapping) else {}
        name, path = mount.get("name"), mount.get("mountPath")
        if name not in names:
            raise VolumeError(
                REASON_INVALID_SPEC, f"{who}: volumeMounts names {name!r}, no volume of the pod"
            )
        assert isinstance(name, str)
        if not isinstance(path, str) or not path.startswith("/") or _unsafe(path):
            raise VolumeError(
                REASON_INVALID_SPEC,
                f"{who}: mountPath {path!r} of volume {name} is not an absolute path "
                "without ':' or ','",
            )
        if path in paths:
            raise VolumeError(REASON_INVALID_SPEC, f"{who}: mountPath {path} is used twice")
        paths.add(path)
        if mount.get("subPath") or mount.get("subPathExpr"):
            raise VolumeError(
                REASON_VOLUME_UNSUPPORTED, f"{who}: subPath of volume {name} is not supported"
            )
        out.append(MountRun(volume=name, path=path, read_only=mount.get("readOnly") is True))
    return tuple(out)


def _offered() -> str:
    return f"a node provides {' and '.join(KINDS)} volumes"


def _size(name: str, value: object) -> int:
    if value is None:
        return 0
    try:
        if isinstance(value, str | int) and not isinstance(value, bool):
            return to_base_units(MEMORY, value)
    except QuantityError:
        pass
    raise VolumeError(REASON_INVALID_SPEC, f"volume {name}: sizeLimit {value!r} is not a quantity")


def _unsafe(path: str) -> bool:
    return ":" in path or "," in path or "\x00" in path


def _list(value: object) -> list[object]:
    return value if isinstance(value, list) else []


def _mapping(value: object) -> Mapping[str, object]:
    return value if isinstance(value, Mapping) else {}

"""The formats of what the agent reads from the bus and turns into paths, users and processes.

Pure. A value of a binding or of an admitted job that becomes a directory name (the pod's
uid: ``pods/<uid>/``, its cgroup ``vcbus/<node>/<uid>``), a file name (a container's log
``logs/<container>/<restart>.log``) or a process argument is checked here before the agent
acts on it, whoever wrote the record: a value out of its format starts nothing, and the
answer names the field. The names follow Kubernetes' own (``IsDNS1123Label``,
``IsDNS1123Subdomain`` of ``k8s.io/apimachinery/pkg/util/validation/validation.go``); a pod
uid is what the job-controller makes (``<job uid prefix>-<pod name>-v<version>-i<n>``) or a
UUID: letters, digits, ``.``, ``_``, ``-``, starting with a letter or digit, 255 at most, so
never ``.``, ``..``, a ``/`` or an absolute path.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from vcbus.contracts import reasons as codes
from vcbus.contracts.objects.pod import Pod

LABEL_MAX = 63
SUBDOMAIN_MAX = 253
UID_MAX = 255
"""A file name's bound on Linux (``NAME_MAX``): the uid names the pod's directory."""

_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_UID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_ENV_NAME = re.compile(r"[^=\x00]+")

REASON_INVALID_BINDING = codes.REASON_INVALID_BINDING
REASON_INVALID_SPEC = codes.REASON_INVALID_SPEC


def _format_error(field: str, value: object, pattern: re.Pattern[str], most: int, what: str) -> str:
    """Why ``value`` is not a string of at most ``most`` matching ``pattern`` (empty: it is)."""
    if isinstance(value, str) and len(value) <= most and pattern.fullmatch(value):
        return ""
    return f"{field} {value!r} is not {what}, {most} at most)"


def label_error(field: str, value: object) -> str:
    """Why ``value`` is not a DNS-1123 label (empty when it is)."""
    what = (
        "a DNS-1123 label (lower case letters, digits and '-', "
        "starting and ending with a letter or digit"
    )
    return _format_error(field, value, _LABEL, LABEL_MAX, what)


def subdomain_error(field: str, value: object) -> str:
    """Why ``value`` is not a DNS-1123 subdomain (empty when it is)."""
    what = "a DNS-1123 subdomain (DNS-1123 labels joined by '.'"
    return _format_error(field, value, _SUBDOMAIN, SUBDOMAIN_MAX, what)


def uid_error(field: str, value: object) -> str:
    """Why ``value`` is not a pod uid the agent can name a directory by (empty when it is)."""
    what = "a pod uid (letters, digits, '.', '_' and '-', starting with a letter or digit"
    return _format_error(field, value, _UID, UID_MAX, what)


def count_error(field: str, value: object) -> str:
    """Why ``value`` is not a count (an int, 0 or more; empty when it is)."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return ""
    return f"{field} {value!r} is not a whole number of 0 or more"


def pod_error(pod: Pod) -> str:
    """The first field of a bound pod out of its format, named; empty when all are fine."""
    namespace, _, job_name = str(pod.job).partition("/")
    checks = (
        uid_error("pod.uid", pod.uid),
        subdomain_error("pod.name", pod.name),
        label_error("pod.namespace", pod.namespace or "default"),
        label_error("pod.job namespace", namespace),
        subdomain_error("pod.job name", job_name),
        label_error("pod.task", pod.task),
        count_error("pod.index", pod.index),
    )
    return next((problem for problem in checks if problem), "")


def task_names_error(names: Iterable[str]) -> str:
    """The first task name of a job that is not a DNS-1123 label, named; empty when all are.

    The plugins name files by them (``etc/volcano/<task>.host``).
    """
    return next((problem for name in names if (problem := label_error("task name", name))), "")


def container_errors(containers: Iterable[Mapping[str, object]]) -> str:
    """The first container whose name, command line or environment cannot be used, named.

    A name becomes a directory of the pod's logs: a DNS-1123 label, unique in the pod. An
    argument or an environment value cannot hold a NUL byte, an environment name neither
    (nor ``=``), as ``execve`` takes them.
    """
    seen: set[str] = set()
    for container in containers:
        name = container.get("name")
        problem = label_error("container name", name)
        if problem:
            return problem
        assert isinstance(name, str)
        if name in seen:
            return f"container name {name!r} is used twice in the pod"
        seen.add(name)
        for field in ("command", "args"):
            words = container.get(field)
            if isinstance(words, list) and any("\x00" in str(word) for word in words):
                return f"container {name}: {field} holds a NUL byte"
        env = container.get("env")
        for item in env if isinstance(env, list) else ():
            key = item.get("name") if isinstance(item, Mapping) else None
            value = item.get("value") if isinstance(item, Mapping) else None
            if isinstance(key, str) and not _ENV_NAME.fullmatch(key):
                return f"container {name}: env name {key!r} holds '=' or a NUL byte"
            if isinstance(value, str) and "\x00" in value:
                return f"container {name}: env {key} holds a NUL byte"
        working = container.get("workingDir")
        if isinstance(working, str) and working and not working.startswith("/"):
            return f"container {name}: workingDir {working!r} is not an absolute path"
    return ""

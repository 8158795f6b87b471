"""``tensorflow``: the cluster spec as ``TF_CONFIG``.

Volcano's ``pkg/controllers/job/plugins/distributed-framework/tensorflow/tensorflow.go``. Pure.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from vcbus.services.agent.plugins.flags import Flags, go_flags, int_flag
from vcbus.services.agent.plugins.model import PodPort
from vcbus.services.agent.plugins.plugin import Grant, JobPlugin, PodCreate

NAME = "tensorflow"
DEFAULT_PORT = 2222
PORT_NAME = "tfjob-port"
"""Volcano opens no container port for tensorflow (every pod has its own network, so
2222 is free in each); on a shared host it must be allocated, named as pytorch's is."""
ENV_TF_CONFIG = "TF_CONFIG"
ROLES = ("ps", "worker", "chief", "evaluator")
"""``clusterInfo``'s fields in their JSON order."""


def flags_of(arguments: Sequence[str]) -> Flags:
    """The plugin's flags (``addFlags``)."""
    return go_flags(
        arguments,
        {
            "ps": "ps",
            "worker": "worker",
            "chief": "chief",
            "evaluator": "evaluator",
            "port": DEFAULT_PORT,
        },
    )


def port(arguments: Sequence[str]) -> PodPort:
    """The port every pod listens on (allocated per pod on a shared host)."""
    return PodPort(name=PORT_NAME, container_port=int_flag(flags_of(arguments), "port"))


def on_pod_create(pod: PodCreate) -> Grant:
    """``tensorflow.go`` ``OnPodCreate`` and ``generateTFClusterSpec``."""
    tasks = pod.job.spec.tasks
    if len(tasks) == 1 and tasks[0].replicas == 1:
        return Grant()
    flags = flags_of(pod.arguments)
    number = int_flag(flags, "port")
    roles = {str(flags[role]): role for role in reversed(ROLES)}
    cluster: dict[str, list[str]] = {}
    hosts = pod.hosts
    for spec in tasks:
        role = roles.get(spec.name)
        if role is None:
            continue
        cluster[role] = [
            f"{hosts.address(spec, i)}:{hosts.port(spec, i, number)}" for i in range(spec.replicas)
        ]
    ordered = {role: cluster[role] for role in ROLES if cluster.get(role)}
    config = {
        "cluster": ordered,
        "task": {"type": roles.get(pod.task, pod.task), "index": pod.index},
    }
    text = json.dumps(config, separators=(",", ":"), ensure_ascii=False)
    return Grant(env=((ENV_TF_CONFIG, text),))


PLUGIN = JobPlugin(name=NAME, on_pod_create=on_pod_create, port=port)

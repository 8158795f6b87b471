"""``svc``: every task's hosts, as env and as the ``<job>-svc`` ConfigMap's files.

Volcano's ``pkg/controllers/job/plugins/svc/svc.go``. Pure.
"""

from __future__ import annotations

from vcbus.services.agent.plugins.flags import go_flags
from vcbus.services.agent.plugins.hosts import host_indexes
from vcbus.services.agent.plugins.plugin import Grant, JobPlugin, PodCreate

NAME = "svc"
ETC_VOLCANO = "etc/volcano"
"""Where the ``svc`` ConfigMap's files are, relative to the directory given (Volcano mounts
them at ``/etc/volcano``: ``svc/const.go`` ``ConfigMapMountPath``)."""
ENV_ETC_VOLCANO = "VCBUS_ETC_VOLCANO"
"""The absolute path that stands for ``/etc/volcano``."""
# svc/const.go
TASK_HOST_FILE = "{}.host"
TASK_HOSTS_ENV = "VC_{}_HOSTS"
TASK_NUM_ENV = "VC_{}_NUM"


def on_pod_create(pod: PodCreate) -> Grant:
    """``svc.go`` ``GenerateHosts`` (the ConfigMap) and ``OnPodCreate`` (its env)."""
    flags = go_flags(
        pod.arguments,
        {
            "publish-not-ready-addresses": False,
            "disable-network-policy": False,
            "inject-hosts-env": True,
        },
    )
    config_map: dict[str, str] = {}
    env: list[tuple[str, str]] = []
    for task in pod.job.spec.tasks:
        names = [pod.hosts.address(task, index) for index in host_indexes(task)]
        key = task.name.replace("-", "_")
        hosts_key = TASK_HOSTS_ENV.format(key.upper())
        num_key = TASK_NUM_ENV.format(key.upper())
        config_map[TASK_HOST_FILE.format(key)] = "\n".join(names)
        config_map[hosts_key] = ",".join(names)
        config_map[num_key] = str(len(names))
        if flags["inject-hosts-env"]:
            env.extend(((hosts_key, config_map[hosts_key]), (num_key, config_map[num_key])))
    env.append((ENV_ETC_VOLCANO, f"{pod.directory}/{ETC_VOLCANO}"))
    files = {f"{ETC_VOLCANO}/{key}": value for key, value in config_map.items()}
    return Grant(env=tuple(env), init_env=tuple(env), files=files)


PLUGIN = JobPlugin(name=NAME, on_pod_create=on_pod_create)

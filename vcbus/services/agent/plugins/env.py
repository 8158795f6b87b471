"""``env``: the pod's index in its task (``pkg/controllers/job/plugins/env/env.go``). Pure."""

from __future__ import annotations

from vcbus.services.agent.plugins.plugin import Grant, JobPlugin, PodCreate

NAME = "env"
# env/const.go
TASK_VK_INDEX = "VK_TASK_INDEX"
TASK_INDEX = "VC_TASK_INDEX"


def on_pod_create(pod: PodCreate) -> Grant:
    """``VK_TASK_INDEX`` then ``VC_TASK_INDEX``, on containers and init containers."""
    granted = ((TASK_VK_INDEX, str(pod.index)), (TASK_INDEX, str(pod.index)))
    return Grant(env=granted, init_env=granted)


PLUGIN = JobPlugin(name=NAME, on_pod_create=on_pod_create)

"""``ssh``: the ``config`` file of the Secret ``<job>-ssh``, each pod by address and port.

Volcano's ``pkg/controllers/job/plugins/ssh/ssh.go``. Pure.
"""

from __future__ import annotations

from vcbus.services.agent.plugins.flags import go_flags, int_flag
from vcbus.services.agent.plugins.hosts import host_indexes, pod_name, template_string
from vcbus.services.agent.plugins.plugin import Grant, JobPlugin, PodCreate

NAME = "ssh"
SSH_CONFIG = "ssh/config"
"""Where the ``ssh`` plugin's ``config`` is, relative to the directory given."""
ENV_SSH_CONFIG = "VCBUS_SSH_CONFIG"
"""The absolute path of the ssh config file."""
DEFAULT_PORT = 22


def on_pod_create(pod: PodCreate) -> Grant:
    """``ssh.go`` ``generateSSHConfig``, with each pod's address and host port."""
    flags = go_flags(
        pod.arguments,
        {
            "ssh-key-file-path": "/root/.ssh",
            "ssh-private-key": "",
            "ssh-public-key": "",
            "ssh-port": DEFAULT_PORT,
        },
    )
    port = int_flag(flags, "ssh-port")
    if not 0 < port <= 65535:  # validateSSHPort
        port = DEFAULT_PORT
    lines = ["StrictHostKeyChecking no", "UserKnownHostsFile /dev/null"]
    for task in pod.job.spec.tasks:
        hostname = template_string(task, "hostname")
        for index in host_indexes(task):
            lines.append(f"Host {hostname or pod_name(pod.job, task, index)}")
            lines.append(f"  HostName {pod.hosts.address(task, index)}")
            lines.append(f"  Port {pod.hosts.port(task, index, port)}")
    pointer = ((ENV_SSH_CONFIG, f"{pod.directory}/{SSH_CONFIG}"),)
    return Grant(env=pointer, init_env=pointer, files={SSH_CONFIG: "\n".join(lines) + "\n"})


PLUGIN = JobPlugin(name=NAME, on_pod_create=on_pod_create)

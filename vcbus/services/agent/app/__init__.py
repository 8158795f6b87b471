"""The agent's shell: everything that does I/O, apart from its pure core.

- :mod:`~vcbus.services.agent.app.shell`: the service (bindings in; pods.status and nodes out),
  its pod loop, heartbeat and state file;
- :mod:`~vcbus.services.agent.app.runtime`: the one runtime interface and its host-process
  implementation (a pod's directory, its supervisor, its cgroup);
- :mod:`~vcbus.services.agent.app.supervisor`: the per-pod supervisor process, and what it
  uses: :mod:`~vcbus.services.agent.app.podlogs` (its log files),
  :mod:`~vcbus.services.agent.app.podman` (containers);
- :mod:`~vcbus.services.agent.app.cgroups`: cpu and memory limits on cgroup v2 or v1;
- :mod:`~vcbus.services.agent.app.logserver`: the pods' logs over HTTP(S).

A package rather than one ``app.py``: a node agent's I/O (processes, cgroups, files, an
HTTP endpoint) is more than a service's shell, and each part is small on its own. This
module imports nothing, so that a supervisor (``python -m
vcbus.services.agent.app.supervisor``) starts without loading the shell.
"""

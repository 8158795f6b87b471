"""What Volcano's job plugins give a pod, for a pod run as host processes (docs/real-jobs.md).

Port of volcano-sh/volcano ``pkg/controllers/job/plugins/`` at HEAD ``ed72c7c8``:
``env/env.go``, ``svc/svc.go``, ``ssh/ssh.go`` and
``distributed-framework/{pytorch,mpi,tensorflow}/*.go`` (``OnPodCreate``, and ``OnJobAdd``
for the files a plugin's ConfigMap or Secret mounts), one module per plugin, as Volcano
keeps a folder per plugin; :mod:`.registry` lists them (:data:`PLUGINS`) and applies them.
Pure: no I/O, no clock.

How to call it (the agent's runtime)::

    ports = pod_ports(job, task)            # before binding a pod's ports
    ...allocate one host port per PodPort, for every pod of the job...
    given = pod_plugins(job, task, index, peers, directory=str(pod_dir / "volcano"))
    ...write given.files under that directory, then start the containers with
    container env + given.env (init containers: + given.init_env), after running
    given.init_containers as the last init containers...

Inputs:

- ``job``: the admitted job (``jobs.admitted``: defaults applied, so ``svc`` is there
  whenever ``pytorch``/``mpi``/``tensorflow`` is, and ``ssh`` whenever ``mpi`` is);
  ``job.spec.plugins`` maps a plugin to its arguments, which are read as Go's ``flag``
  package reads them (:func:`go_flags`), defaults and all, as each plugin's ``addFlags``.
- ``task`` and ``index``: the pod ``<job>-<task>-<index>``.
- ``peers``: what is known of the job's pods, this one included (:class:`Peer`): the
  address the other pods can reach it at (its node's address: pods on one host share
  its network) and its host port for each container port of :func:`pod_ports`.

Output (:class:`PluginGrants`), under Volcano's names and formats:

============  ===========================================================================
plugin        what the pod gets
============  ===========================================================================
env           ``VK_TASK_INDEX`` then ``VC_TASK_INDEX`` = index; containers and init
              containers.
svc           ``VC_<TASK>_HOSTS`` and ``VC_<TASK>_NUM`` for every task (task order; TASK
              upper-cased, ``-`` → ``_``; skipped with ``--inject-hosts-env=false``), on
              containers and init containers; the ConfigMap ``<job>-svc`` as files
              ``etc/volcano/<task>.host`` (hosts one a line; ``-`` → ``_``, case kept),
              ``etc/volcano/VC_<TASK>_HOSTS`` (joined by ``,``) and
              ``etc/volcano/VC_<TASK>_NUM``. A task whose template sets ``hostname`` has
              one host, as in Volcano. ``VCBUS_ETC_VOLCANO`` says where ``/etc/volcano``
              is.
pytorch       only when the job has the master task: ``MASTER_ADDR``, ``MASTER_PORT``,
              ``WORLD_SIZE`` (replicas of master + worker), ``RANK`` (0 on the master,
              index + 1 on a worker, none on other tasks); containers only. With
              ``--wait-master-enabled`` a worker gets the ``wait-for-master`` init
              container (``sh -c`` polling the master's port), as Volcano adds it.
mpi           on the master task only: ``MPI_HOST`` = the worker hosts joined by ``,``;
              containers and init containers.
tensorflow    ``TF_CONFIG`` = ``{"cluster":{"ps":[…],"worker":[…],"chief":[…],
              "evaluator":[…]},"task":{"type":…,"index":i}}`` (Go's ``json.Marshal``:
              that key order, empty roles left out, no spaces), hosts ``host:port``;
              containers only; nothing for a job of one task with one replica.
ssh           the ``config`` file of the Secret ``<job>-ssh`` as ``ssh/config``
              (``StrictHostKeyChecking no``, ``UserKnownHostsFile /dev/null``, then per
              pod ``Host <pod>`` / ``HostName <address>`` / ``Port <port>``);
              ``VCBUS_SSH_CONFIG`` names it (use ``ssh -F "$VCBUS_SSH_CONFIG"``, or Open
              MPI's ``OMPI_MCA_plm_rsh_args="-F $VCBUS_SSH_CONFIG"``).
============  ===========================================================================

Where a host process differs from a Volcano pod, and why:

- A host is an address, not ``<pod>.<job>``: processes have no per-pod DNS, so every
  host above is the peer's :attr:`Peer.address`. Two pods of a job on one host have the
  same address; they differ by port.
- A port is the peer's host port: pods sharing a host share its ports, so each container
  port of :func:`pod_ports` is allocated a host port per pod, and a peer is named
  ``address:<its host port>`` (``MASTER_PORT`` is the master pod's host port for the
  pytorch port; ``TF_CONFIG`` uses each pod's host port for the tensorflow port; the ssh
  config each pod's host port for the ssh port). A pod learns its own as
  ``VCBUS_PORT_<containerPort>=<host port>``, to listen on it. A peer with no host port
  for a container port is reached on that port unchanged (the host's own service: with
  the default ``--ssh-port`` 22, the host's sshd).
- ssh: no key pair is generated and no ``authorized_keys`` written. Volcano's keys let
  the job's pods log into each other's sshd; host processes run as the agent's run-as
  user on real hosts, so they log in as that user with its own keys, to the host's sshd
  or to an sshd the job starts on its allocated ssh port. The config above gives each
  pod's name as an ssh host alias, so ``ssh <job>-<task>-<i>`` reaches it.
- The plugins are applied in name order (Volcano ranges over a Go map, in random order);
  a pod's own ``env`` comes first and these are appended after it, as Volcano appends
  them.
- A peer not yet known (not bound, so without an address) is written as Volcano writes
  it, ``<job>-<task>-<i>.<job>`` with the container port, which no host resolves, as a
  Kubernetes pod's name does not resolve before the pod runs; :attr:`PluginGrants.missing`
  lists those peers, so the runtime can wait for them (a gang's pods are bound in one
  cycle) and rewrite the files once they are known, as a mounted ConfigMap updates.
- ``svc`` makes no Service and no NetworkPolicy (``--publish-not-ready-addresses`` and
  ``--disable-network-policy`` change nothing): hosts have neither; who may reach a pod's
  ports is the hosts' firewall's business.
- ``ray`` and ``hcclrank`` give nothing here: ray rewrites the pod's command for an
  image that has ``ray``, hcclrank reads Ascend device annotations.
"""

from __future__ import annotations

from vcbus.services.agent.plugins.flags import go_flags
from vcbus.services.agent.plugins.model import Peer, PluginGrants, PodPort
from vcbus.services.agent.plugins.registry import PLUGINS, pod_plugins, pod_ports

__all__ = ["PLUGINS", "Peer", "PluginGrants", "PodPort", "go_flags", "pod_plugins", "pod_ports"]

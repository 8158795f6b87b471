"""The agent's book of its pods' peers: who belongs to a job's current incarnation, and where.

A pod's peers (the addresses and host ports every plugin variable names: ``MASTER_ADDR``,
``MASTER_PORT``, ``VC_<TASK>_HOSTS``, ``TF_CONFIG``, ``MPI_HOST``, the ssh config) are the
pods of its own incarnation of the job, and none other. The book folds three things the
agent reads:

- ``pods``: each ``PodCreated`` names a pod's current uid and its job version (the
  ``volcano.sh/job-version`` label); a ``PodDeleted`` (of that uid, or of any, when it names
  none) makes the book forget the pod and every status of it. That deletion is what lets
  every agent forget a deleted pod's address: a deleted pod publishes no status of its own.
- ``pods.status``: each pod uid's newest ``PodPhaseChanged`` (its node's address and the host
  ports it holds). A status of a uid already deleted is dropped.
- the pods bound to this node (from the agent's own state).

:meth:`PeerBook.peers` of a pod returns only the pods created for the same job version as
it, each at the uid created last for its name, with a ``Pending`` or ``Running`` status of
that very uid (or bound here). Any other peer is missing, and the agent waits for it: a
restarted job (a new version) or a job deleted and submitted again (new uids) never gets
the address or port of a pod of the run before. A pod that ended (``Succeeded``, ``Failed``,
``NodeLost``) is no one's peer either.

Pure: no I/O, no clock. Bounded by the pods that exist (deletions remove them) and the
uids of recent deletions the agent keeps.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from vcbus.contracts.events.pods import PodCreated, PodDeleted
from vcbus.contracts.events.pods_status import PodPhaseChanged
from vcbus.contracts.keys import JobKey, PodKey, pod_key
from vcbus.contracts.objects.pod import LABEL_JOB_VERSION, PodPhase
from vcbus.services.agent.plugins import Peer

ACTIVE = (PodPhase.PENDING, PodPhase.RUNNING)


class _Created:
    """A pod as created: its uid, job version, task and index."""

    __slots__ = ("index", "task", "uid", "version")

    def __init__(self, uid: str, version: str, task: str, index: int) -> None:
        self.uid = uid
        self.version = version
        self.task = task
        self.index = index


class PeerBook:
    """The pods of each job as created, and each pod uid's newest status."""

    def __init__(self) -> None:
        self._created: dict[JobKey, dict[PodKey, _Created]] = {}
        self._statuses: dict[JobKey, dict[str, PodPhaseChanged]] = {}

    def on_created(self, event: PodCreated) -> None:
        """The pod's uid and version are now its name's current ones."""
        pod = event.pod
        version = pod.labels.get(LABEL_JOB_VERSION, "")
        jobs = self._created.setdefault(pod.job, {})
        key = pod_key(pod.namespace, pod.name)
        before = jobs.get(key)
        if before is not None and before.uid != pod.uid:
            self._statuses.get(pod.job, {}).pop(before.uid, None)
        jobs[key] = _Created(pod.uid, version, pod.task, pod.index)

    def on_deleted(self, event: PodDeleted) -> None:
        """Forget the pod (that uid, or whichever uid when the deletion names none)."""
        jobs = self._created.get(event.job)
        created = jobs.get(event.pod) if jobs is not None else None
        if jobs is not None and created is not None and event.pod_uid in ("", created.uid):
            del jobs[event.pod]
            if not jobs:
                del self._created[event.job]
        statuses = self._statuses.get(event.job)
        if statuses is None:
            return
        if event.pod_uid:
            statuses.pop(event.pod_uid, None)
        else:
            for uid in [uid for uid, status in statuses.items() if status.pod == event.pod]:
                del statuses[uid]
        if not statuses:
            del self._statuses[event.job]

    def on_status(self, event: PodPhaseChanged, deleted: Collection[str]) -> None:
        """Keep the uid's newest status, unless that uid was deleted (a late status)."""
        if not event.pod_uid or event.pod_uid in deleted:
            return
        self._statuses.setdefault(event.job, {})[event.pod_uid] = event

    def status_of(self, job: JobKey, uid: str) -> PodPhaseChanged | None:
        """The newest status of the pod ``uid``, if any."""
        return self._statuses.get(job, {}).get(uid)

    def peers(
        self, job: JobKey, key: PodKey, uid: str, here: Iterable[tuple[str, Peer]]
    ) -> list[Peer]:
        """The peers of pod ``key`` (uid ``uid``) of ``job`` whose address is known.

        ``here``: the active pods bound to this node, as ``(uid, peer)``; the pod itself
        is always among its peers when it is there (its own host ports). The others count
        only when they are of the pod's job version, the current uid of their name, and
        Pending or Running there (their status) or here.
        """
        local = dict(here)
        found: dict[tuple[str, int], Peer] = {}
        own = local.get(uid)
        if own is not None:
            found[(own.task, own.index)] = own
        jobs = self._created.get(job, {})
        mine = jobs.get(key)
        if mine is None or mine.uid != uid:
            return list(found.values())  # its own creation not read yet: wait for it
        statuses = self._statuses.get(job, {})
        for created in jobs.values():
            if created.version != mine.version or (created.task, created.index) in found:
                continue
            peer = local.get(created.uid)
            if peer is None:
                status = statuses.get(created.uid)
                if status is None or status.phase not in ACTIVE or not status.host_ip:
                    continue
                peer = Peer(
                    task=created.task,
                    index=created.index,
                    address=status.host_ip,
                    ports=status.ports,
                    node=status.node or "",
                )
            found[(created.task, created.index)] = peer
        return list(found.values())

"""The allocator as Kubernetes' node lifecycle controller for real nodes, pure.

The rule (:mod:`vcbus.core.node_lifecycle`): a node that has sent a ``NodeHeartbeat`` is
NotReady once its heartbeats stop for the grace period, and its pods are lost once it has
been NotReady for the eviction timeout. The allocator applies it at each cycle, on the
cycle's snapshot and clock:

- :func:`cordon_not_ready`: a NotReady node is unschedulable for the cycle (Volcano's
  scheduler skips a node that is not Ready), so nothing new is placed there; its pods
  still count on it until they end.
- :func:`lost_pods`: each active pod (bound, Pending or Running) of a lost node, or of a
  real node that was removed (at once, as the simulated cluster does), ends ``Failed``
  with reason ``NodeLost``, published on ``pods.status`` as the node would have
  (Kubernetes' controller marks the pods and deletes them; here the job-controller's
  lifecycle policies take it from there, as for a removed simulated node). The id derives
  from pod, uid and node, and the allocator folds its own statuses at once, so a status is
  published once, whatever the number of cycles, restarts or replicas.
- :func:`next_due`: when the next of these moments comes, for the cycle timer.

Simulated nodes never heartbeat and are never touched. A node that heartbeats again is
Ready again; pods already lost stay ended.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from types import MappingProxyType

import msgspec

from vcbus.contracts._base import derive_event_id, tag_of
from vcbus.contracts.events.pods_status import PodPhaseChanged
from vcbus.contracts.keys import NodeName
from vcbus.contracts.objects.pod import POD_NODE_LOST, PodPhase
from vcbus.core.node_lifecycle import NodeLifecycleConf, Readiness, is_lost, readiness
from vcbus.core.scheduling.model import naive_utc
from vcbus.core.scheduling.snapshot import ClusterSnapshot

PHASE_KIND = tag_of(PodPhaseChanged)
_ACTIVE = frozenset({PodPhase.PENDING, PodPhase.RUNNING})


def cordon_not_ready(
    snapshot: ClusterSnapshot, now: datetime, conf: NodeLifecycleConf
) -> ClusterSnapshot:
    """Return the snapshot with each NotReady node unschedulable (the same one when none)."""
    cordoned = {
        name: msgspec.structs.replace(node, unschedulable=True)
        for name, beat in snapshot.heartbeats.items()
        if (node := snapshot.nodes.get(name)) is not None
        and not node.unschedulable
        and readiness(beat.at, now, conf) is Readiness.NOT_READY
    }
    if not cordoned:
        return snapshot
    nodes = MappingProxyType({**snapshot.nodes, **cordoned})
    return dataclasses.replace(snapshot, nodes=nodes)


def lost_pods(
    snapshot: ClusterSnapshot, now: datetime, conf: NodeLifecycleConf
) -> tuple[PodPhaseChanged, ...]:
    """Return a ``Failed``/``NodeLost`` status for each active pod of each lost node.

    Args:
        snapshot: the cluster as the allocator knows it (its own statuses folded in).
        now: the cycle's time.
        conf: the grace period and eviction timeout.

    Returns:
        The statuses, by pod key.
    """
    lost = {
        name: (
            f"node {name} sent no heartbeat since {beat.at.isoformat()} (grace "
            f"{conf.grace_seconds:g} s, eviction timeout {conf.eviction_seconds:g} s)"
            if name in snapshot.nodes
            else f"node {name} was removed"
        )
        for name, beat in snapshot.heartbeats.items()
        if name not in snapshot.nodes or is_lost(beat.at, now, conf)
    }
    if not lost:
        return ()
    out = []
    for key in sorted(snapshot.pods):
        state = snapshot.pods[key]
        node = state.node
        if node is None or node not in lost or state.phase not in _ACTIVE:
            continue
        pod = state.pod
        out.append(
            PodPhaseChanged(
                event_id=derive_event_id(PHASE_KIND, key, f"{pod.uid}|{node}|{POD_NODE_LOST}"),
                occurred_at=now,
                pod=key,
                job=pod.job,
                task=pod.task,
                node=NodeName(node),
                phase=PodPhase.FAILED,
                reason=POD_NODE_LOST,
                message=lost[node],
                pod_uid=pod.uid,
            )
        )
    return tuple(out)


def next_due(snapshot: ClusterSnapshot, now: datetime, conf: NodeLifecycleConf) -> datetime | None:
    """The next moment a real node becomes NotReady or lost, after ``now``; else ``None``."""
    moments = [
        moment
        for name, beat in snapshot.heartbeats.items()
        if name in snapshot.nodes
        for moment in (conf.not_ready_at(beat.at), conf.lost_at(beat.at))
        if naive_utc(moment) > naive_utc(now)
    ]
    return min(moments, key=naive_utc) if moments else None

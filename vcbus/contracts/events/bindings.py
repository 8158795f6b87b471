"""``bindings``: the allocator's commands to the cluster, keyed by node.

``BindingCreated`` binds a pod; ``PodEvictionRequested`` ends one so that another job can
take its capacity (preempt, reclaim).
"""

from __future__ import annotations

from vcbus.contracts._base import Event
from vcbus.contracts.keys import JobKey, NodeName, PodKey
from vcbus.contracts.objects.pod import Pod


class BindingCreated(Event, tag="binding.created.v1", frozen=True, kw_only=True):
    """Bind ``pod`` to ``node``; the cluster accepts it or refuses it on ``pods.status``."""

    pod: Pod
    node: NodeName
    attempt: int = 0
    """How many earlier bindings of this pod the cluster refused; part of the event id, so a
    retry to the same node is a new event, and lets a late echo of a refused one be ignored."""
    signature: str = ""
    """The allocator's signature of the node, the pod's identity, requests, grace period and
    ``pod.admitted_digest`` (``ed25519:<key id>:<base64>``): a node agent that trusts the
    allocator's key starts only what the allocator bound (docs/security.md). Empty when the
    allocator has no key."""


class PodEvictionRequested(Event, tag="pod.eviction_requested.v1", frozen=True, kw_only=True):
    """End ``pod`` on ``node`` after its grace period, for ``taker`` (preempt or reclaim).

    The cluster keeps the pod's resources until the grace period
    (``terminationGracePeriodSeconds``, default 30 s) is over, then reports it ``Failed``
    with reason ``Evicted`` and a message naming the taker; the job-controller applies the
    victim job's ``PodEvicted`` policies. A second request for the same pod changes nothing.
    """

    pod: PodKey
    pod_uid: str
    """The incarnation to evict: a pod that reused the name is never ended by it."""
    job: JobKey
    """The victim's job."""
    task: str
    node: NodeName
    reason: str
    """``Preempted`` (a higher-priority job of the same queue) or ``Reclaimed`` (a queue
    below its deserved share)."""
    taker: str
    """Who takes the capacity: the preemptor's job key, or the reclaiming queue's name."""
    preemptor: JobKey
    """The job whose pods wait for this capacity (its trace carries the eviction)."""
    message: str = ""


BindingsEvent = BindingCreated | PodEvictionRequested

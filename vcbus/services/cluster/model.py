"""The state of one simulated node: its spec, the pods bound to it and what they use."""

from __future__ import annotations

import bisect
import functools
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta

import msgspec

from vcbus.contracts.keys import JobKey, NodeName, PodKey
from vcbus.contracts.objects.node import Node
from vcbus.contracts.objects.pod import PodPhase
from vcbus.contracts.quantity import PODS, Resources

ACTIVE_PHASES = frozenset({PodPhase.PENDING, PodPhase.RUNNING})
"""Phases in which a pod holds its node's capacity (terminal pods free it, as in Volcano)."""


class SimPod(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A pod bound to a simulated node, with its run settings read at bind time.

    ``seq`` is the node's binding number of this pod: with ``uid`` it tells apart two
    incarnations of the same pod name, so event ids never collide. ``invalid`` holds the
    message of an unreadable ``vcbus.io/*`` annotation: such a pod fails when it would
    start.
    """

    key: PodKey
    uid: str
    job: JobKey
    task: str
    requests: Resources
    seq: int
    phase: PodPhase
    bound_at: datetime
    starts_at: datetime
    run_seconds: float | None = None
    exit_code: int = 0
    invalid: str = ""
    started_at: datetime | None = None
    finished_at: datetime | None = None
    grace_seconds: float = 30.0
    """How long the pod runs on once asked to be evicted (``terminationGracePeriodSeconds``)."""
    evict_at: datetime | None = None
    """When an eviction requested for the pod ends it (its grace period over)."""
    evict_message: str = ""
    """The message of the ``Evicted`` status, naming who takes the capacity."""

    @property
    def is_active(self) -> bool:
        """Whether the pod holds capacity (Pending or Running)."""
        return self.phase in ACTIVE_PHASES

    @property
    def ends_at(self) -> datetime | None:
        """When a Running pod's run time is over, or None when it runs until deleted."""
        if self.started_at is None or self.run_seconds is None:
            return None
        return self.started_at + _run_time(self.run_seconds)

    @property
    def due_at(self) -> datetime | None:
        """When the pod's next timed transition is due, or None when there is none."""
        phase = self.phase
        due: datetime | None = None
        if phase == PodPhase.PENDING:
            due = self.starts_at
        elif phase == PodPhase.RUNNING and self.started_at is not None:
            due = (
                None if self.run_seconds is None else self.started_at + _run_time(self.run_seconds)
            )
        elif phase not in ACTIVE_PHASES:
            return None
        evict_at = self.evict_at
        if evict_at is not None and (due is None or evict_at <= due):
            return evict_at
        return due

    @property
    def is_evicting(self) -> bool:
        """Whether an eviction was requested and the pod still runs out its grace period."""
        return self.evict_at is not None and self.phase in ACTIVE_PHASES


class SimNode(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True, dict=True):
    """One simulated node: the Node as published, its bound pods and their usage.

    ``generation`` counts the node's published changes (ids of ``nodes`` events).
    A removed node stays as a tombstone (``removed``, no pods) so that ``generation`` and
    ``seq`` keep growing if it is added again. ``used`` is the sum of the requests of the
    active pods, plus one ``pods`` slot each; ``pods`` is sorted by key.

    The instance ``__dict__`` (``dict=True``) holds only the memo of :attr:`due_at`,
    which is neither encoded nor compared.
    """

    node: Node
    generation: int = 1
    removed: bool = False
    seq: int = 0
    pods: tuple[SimPod, ...] = ()
    used: Resources = {}

    @property
    def name(self) -> NodeName:
        """The node's name."""
        return NodeName(self.node.name)

    @functools.cached_property
    def due_at(self) -> datetime | None:
        """When the next transition of a pod here is due (the earliest), or None.

        Worked out once per state, from the pods, unless the function that built the
        state from the one before already knew it (see :func:`with_due_at`).
        """
        earliest = None
        for pod in self.pods:
            due = pod.due_at
            if due is not None and (earliest is None or due < earliest):
                earliest = due
        return earliest

    def find(self, key: PodKey) -> SimPod | None:
        """Return the pod bound here under ``key``, or None."""
        at = self.index(key)
        return None if at is None else self.pods[at]

    def index(self, key: PodKey) -> int | None:
        """Return the index in ``pods`` of the pod bound here under ``key``, or None."""
        at = bisect.bisect_left(self.pods, key, key=_key)
        if at < len(self.pods) and self.pods[at].key == key:
            return at
        return None


def demand(requests: Mapping[str, int]) -> Resources:
    """Return what a pod takes from a node: its requests and one ``pods`` slot.

    Args:
        requests: the pod's resource requests in base units.

    Returns:
        The requests with ``pods`` set to 1, keys sorted.
    """
    out = {name: amount for name, amount in requests.items() if name != PODS}
    out[PODS] = 1
    return {name: out[name] for name in sorted(out)}


def usage(pods: Iterable[SimPod]) -> Resources:
    """Return the resources held by the active pods among ``pods``.

    Args:
        pods: the pods bound to a node.

    Returns:
        The sum of their demands (see :func:`demand`), keys sorted.
    """
    total: dict[str, int] = {}
    for pod in pods:
        if pod.phase in ACTIVE_PHASES:
            for name, amount in pod.requests.items():
                if name != PODS:
                    total[name] = total.get(name, 0) + amount
            total[PODS] = total.get(PODS, 0) + 1
    return {name: total[name] for name in sorted(total)}


def with_pods(node: SimNode, pods: Iterable[SimPod]) -> SimNode:
    """Return ``node`` holding ``pods`` (sorted by key), with ``used`` recomputed.

    Args:
        node: the node before the change.
        pods: the pods it holds after the change.

    Returns:
        The new node state.
    """
    ordered = tuple(sorted(pods, key=_key))
    return msgspec.structs.replace(node, pods=ordered, used=usage(ordered))


def with_pod_added(node: SimNode, pod: SimPod) -> SimNode:
    """Return ``node`` also holding ``pod``, whose key none of its pods has.

    The state :func:`with_pods` would return, without going over the other pods:
    ``pod`` is inserted in key order and ``used`` grows by its demand alone.

    Args:
        node: the node before the change (pods sorted by key, ``used`` their usage).
        pod: the new pod.

    Returns:
        The new node state, its ``seq`` the pod's.
    """
    pods = node.pods
    at = bisect.bisect_right(pods, pod.key, key=_key)
    used = _plus(node.used, pod.requests) if pod.phase in ACTIVE_PHASES else node.used
    added = msgspec.structs.replace(
        node, seq=pod.seq, pods=(*pods[:at], pod, *pods[at:]), used=used
    )
    due, earliest = pod.due_at, node.due_at
    return with_due_at(
        added, earliest if due is None or (earliest is not None and earliest <= due) else due
    )


def with_pod_removed(node: SimNode, at: int) -> SimNode:
    """Return ``node`` without its pod at index ``at``, its demand freed.

    Args:
        node: the node before the change (pods sorted by key, ``used`` their usage).
        at: the index of the pod in ``node.pods``.

    Returns:
        The new node state (the state :func:`with_pods` would return).
    """
    gone = node.pods[at]
    pods = (*node.pods[:at], *node.pods[at + 1 :])
    used: Resources | None = node.used
    if gone.phase in ACTIVE_PHASES:
        used = _minus(node.used, gone.requests)
    removed = msgspec.structs.replace(node, pods=pods, used=usage(pods) if used is None else used)
    due, earliest = gone.due_at, node.due_at
    if due is None or (earliest is not None and earliest < due):
        return with_due_at(removed, earliest)
    return removed


def with_pods_moved(node: SimNode, moved: Mapping[int, SimPod]) -> SimNode:
    """Return ``node`` with the pods at the given indexes replaced, keys unchanged.

    A pod that leaves the active phases frees its demand; the other pods are summed
    again only if one became active again (the core never does that).

    Args:
        node: the node before the change (pods sorted by key, ``used`` their usage).
        moved: index in ``node.pods`` → the pod's new state (same key).

    Returns:
        The new node state (the state :func:`with_pods` would return).
    """
    pods = list(node.pods)
    freed: list[Mapping[str, int]] = []
    revived = False
    for at, pod in moved.items():
        was_active = pods[at].phase in ACTIVE_PHASES
        is_active = pod.phase in ACTIVE_PHASES
        if was_active and not is_active:
            freed.append(pods[at].requests)
        revived = revived or (is_active and not was_active)
        pods[at] = pod
    held = tuple(pods)
    used: Resources | None = None if revived else node.used
    for requests in freed:
        if used is None:
            break
        used = _minus(used, requests)
    return msgspec.structs.replace(node, pods=held, used=usage(held) if used is None else used)


def with_due_at(node: SimNode, due: datetime | None) -> SimNode:
    """Return ``node`` with :attr:`SimNode.due_at` known to be ``due``, not worked out again.

    Args:
        node: a state just built, not yet shared.
        due: the earliest due time of its pods, which the caller already knows.

    Returns:
        ``node`` itself.
    """
    node.__dict__["due_at"] = due
    return node


def _key(pod: SimPod) -> PodKey:
    return pod.key


@functools.lru_cache(maxsize=1024)
def _run_time(seconds: float) -> timedelta:
    """The ``timedelta`` of a run time: pods share a few, and a timedelta costs to build."""
    return timedelta(seconds=seconds)


def _plus(used: Resources, requests: Mapping[str, int]) -> Resources:
    """``used`` plus the demand of ``requests``, keys sorted (``add(used, demand(...))``)."""
    out = dict(used)
    grown = False
    for name, amount in requests.items():
        if name == PODS:
            continue
        if name in out:
            out[name] += amount
        else:
            out[name] = amount
            grown = True
    if PODS in out:
        out[PODS] += 1
    else:
        out[PODS] = 1
        grown = True
    return {name: out[name] for name in sorted(out)} if grown else out


def _minus(used: Resources, requests: Mapping[str, int]) -> Resources | None:
    """``used`` less the demand of ``requests``, or None when the pods must be summed again.

    A dimension that falls to 0 may have been that pod's alone, and :func:`usage` would
    not list it: the caller then sums the pods left (once a node empties, or on zero
    requests).
    """
    out = dict(used)
    for name, amount in requests.items():
        if name == PODS:
            continue
        left = out.get(name, 0) - amount
        if left == 0 or name not in out:
            return None
        out[name] = left
    left = out.get(PODS, 0) - 1
    if left <= 0:
        return None
    out[PODS] = left
    return out

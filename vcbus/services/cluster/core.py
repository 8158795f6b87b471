"""The simulated cluster's pure core: bind or refuse, run pods on a timer, manage nodes.

One state per node (the ``bindings`` topic is keyed by node). What the core does:

- ``BindingCreated``: ignored for a node the cluster never registered: that node is a
  real one, whose agent runs its pods (docs/design.md#real-nodes). Accepted when the node exists, is
  not cordoned, does not hold the pod already, and the pod's requests fit its free allocatable
  on every dimension (one ``pods`` slot too when the node has a ``pods`` allocatable).
  Acceptance emits
  ``PodPhaseChanged`` (Pending, node set, reason ``Bound``), or, when the pod has no start
  delay, ``Running`` at once (reason ``Bound`` too: one status instead of two); otherwise
  ``BindingRefused`` with reason ``NodeNotFound``, ``AlreadyBound``, ``NodeUnschedulable`` or
  ``NodeOvercommitted`` (each dimension short, with the amounts). Like a kubelet's
  admission, this is the last check: two allocators can never overcommit a node.
- ``Tick(now)``: a pod starts (Running) once its start delay has passed
  (``vcbus.io/start-seconds``, else ``ClusterConf.start_delay_seconds``), and ends once
  ``vcbus.io/run-seconds`` have passed: Succeeded when ``vcbus.io/exit-code`` is 0 or
  absent, Failed otherwise. Without run-seconds it runs until deleted. An unreadable
  annotation fails the pod when it would start (reason ``InvalidAnnotation``).
- ``PodEvictionRequested``: the pod (that incarnation, Pending or Running) runs out its
  grace period (``terminationGracePeriodSeconds`` of its template, default 30 s), holding
  its resources until then, and then ends ``Failed`` with reason ``Evicted`` and a message
  naming who takes the capacity; a pod that ends by itself first ends as it would have. A
  second request changes nothing (the first grace period stands); a request for a pod that
  is not there, another incarnation, or an ended pod is ignored.
- ``PodDeleted``: the pod goes and frees its capacity; with ``pod_uid`` set, only that
  incarnation (a late delete never removes a pod that reused the name). Nothing is
  emitted: the pod no longer exists, and a terminal phase would read as a pod failure to
  the job-controller.
  Terminal pods (Succeeded, Failed) already hold no capacity, as in Volcano's node
  accounting; they stay listed until deleted.
- Node commands: ``NodeRegistered``, ``NodeChanged``, ``NodeRemoved`` on ``nodes``. A
  removed node's active pods fail with reason ``NodeLost``; the node stays as a tombstone
  so its generation keeps growing. Changing a node never evicts: a smaller allocatable
  only refuses new bindings until enough pods leave.

Ids are derived from content (pod key, uid, node, the node's binding number and the
phase; node name and generation; the refused binding's id), so a step re-run after a
crash emits the same ids. Applying an input a second time changes nothing; a refused
binding is refused again with the same id.

Deliberate deviation from Kubernetes: a cordoned node refuses bindings (a kubelet would
accept them; only the scheduler skips cordoned nodes).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import assert_never

import msgspec

from vcbus.contracts import reasons as codes
from vcbus.contracts._base import Event, derive_event_id, tag_of
from vcbus.contracts.events.bindings import BindingCreated, PodEvictionRequested
from vcbus.contracts.events.cluster_commands import (
    ClusterCommand,
    NodeAddRequested,
    NodeCordonRequested,
    NodeRemoveRequested,
    NodeUncordonRequested,
    PodPhaseSetRequested,
)
from vcbus.contracts.events.nodes import NodeChanged, NodeRegistered, NodeRemoved
from vcbus.contracts.events.pods import PodDeleted
from vcbus.contracts.events.pods_status import BindingRefused, PodPhaseChanged
from vcbus.contracts.keys import NodeName, PodKey, pod_key
from vcbus.contracts.objects.node import Node
from vcbus.contracts.objects.pod import (
    POD_ALREADY_BOUND,
    POD_BOUND,
    POD_COMPLETED,
    POD_ERROR,
    POD_EVICTED,
    POD_NODE_LOST,
    POD_NODE_OVERCOMMITTED,
    POD_STARTED,
    PodPhase,
)
from vcbus.contracts.quantity import PODS, Resources, format_quantity
from vcbus.core.step import Ctx, Step, Tick
from vcbus.services.cluster.model import (
    SimNode,
    SimPod,
    demand,
    with_due_at,
    with_pod_added,
    with_pod_removed,
    with_pods_moved,
)
from vcbus.services.cluster.pod_timing import grace, run_settings

ClusterInput = BindingCreated | PodEvictionRequested | PodDeleted | Tick | ClusterCommand
"""Everything the cluster core handles."""

REASON_BOUND = POD_BOUND
REASON_STARTED = POD_STARTED
REASON_COMPLETED = POD_COMPLETED
REASON_ERROR = POD_ERROR
REASON_INVALID_ANNOTATION = codes.REASON_INVALID_ANNOTATION
REASON_NODE_LOST = POD_NODE_LOST
REASON_NODE_NOT_FOUND = codes.REASON_NODE_NOT_FOUND
REASON_ALREADY_BOUND = POD_ALREADY_BOUND
REASON_NODE_UNSCHEDULABLE = codes.REASON_NODE_UNSCHEDULABLE
REASON_NODE_OVERCOMMITTED = POD_NODE_OVERCOMMITTED
REASON_EVICTED = POD_EVICTED


@dataclass(frozen=True, slots=True)
class ClusterConf:
    """How the simulated cluster runs pods.

    Attributes:
        start_delay_seconds: delay between binding and Running for a pod without
            ``vcbus.io/start-seconds``.
        start_jitter_seconds: when above 0 and the shell passes a seeded ``ctx.rng``, a
            uniform extra delay in ``[0, start_jitter_seconds]`` for those same pods.
    """

    start_delay_seconds: float = 0.0
    start_jitter_seconds: float = 0.0

    def __post_init__(self) -> None:
        """Refuse negative or non-finite delays, saying which setting to fix."""
        for field in ("start_delay_seconds", "start_jitter_seconds"):
            value = getattr(self, field)
            if not math.isfinite(value) or value < 0:
                msg = f"cluster setting {field} must be a number of seconds >= 0, got {value!r}"
                raise ValueError(msg)


def decide(
    state: SimNode | None,
    event: ClusterInput,
    ctx: Ctx,
    conf: ClusterConf,
    *,
    bound_elsewhere: NodeName | None = None,
) -> Step[SimNode | None]:
    """Apply one input to one node's state.

    Args:
        state: the node's state, None when the node was never added.
        event: the input; pod inputs (``PodDeleted``, ``PodPhaseSetRequested``) leave a
            node that does not hold the pod unchanged, so the shell may route them with
            :func:`locate_pods` or hand them to every node it owns.
        ctx: the time (``ctx.now``) and, for start jitter only, a seeded ``ctx.rng``.
        conf: the cluster settings.
        bound_elsewhere: for a ``BindingCreated``, the other node the shell knows to hold
            a pod of the same key (from :func:`locate_pods` over the nodes it owns), which
            refuses the binding with ``AlreadyBound``.

    Returns:
        The node's new state and the events to publish, in order.
    """
    match event:
        case BindingCreated():
            return _bind(state, event, ctx, conf, bound_elsewhere)
        case PodEvictionRequested():
            return _evict(state, event, ctx)
        case PodDeleted():
            return _delete(state, event.pod, event.pod_uid)
        case Tick():
            return _advance(state, event.now)
        case PodPhaseSetRequested():
            return _set_phase(state, event, ctx)
        case NodeAddRequested():
            return _add_node(state, event.node, ctx)
        case NodeCordonRequested():
            return _cordon(state, event.name, ctx, unschedulable=True)
        case NodeUncordonRequested():
            return _cordon(state, event.name, ctx, unschedulable=False)
        case NodeRemoveRequested():
            return _remove_node(state, event.name, ctx)
        case _:
            assert_never(event)


def next_deadline(state: SimNode | None) -> datetime | None:
    """Return when the node's next pod transition is due, for the shell's next ``Tick``.

    Args:
        state: the node's state.

    Returns:
        The earliest start or end time not yet applied (already past when a ``Tick`` is
        late), or None when no pod has one.
    """
    return None if state is None else state.due_at


def locate_pods(nodes: Iterable[SimNode]) -> dict[PodKey, NodeName]:
    """Return which node holds each pod, for routing pod inputs and ``bound_elsewhere``.

    Args:
        nodes: node states (removed nodes hold no pods).

    Returns:
        Pod key → node name, keys sorted.
    """
    found = {pod.key: node.name for node in nodes for pod in node.pods}
    return {key: found[key] for key in sorted(found)}


# --- bindings ---------------------------------------------------------------------------


def _bind(
    state: SimNode | None,
    binding: BindingCreated,
    ctx: Ctx,
    conf: ClusterConf,
    bound_elsewhere: NodeName | None,
) -> Step[SimNode | None]:
    if state is None:
        # a node this cluster never registered is another runner's (a real node's agent)
        return Step(state)
    pod = binding.pod
    key = pod_key(pod.namespace, pod.name)
    node = _live(state, binding.node)
    if node is None:
        return _refuse(
            state, binding, ctx, REASON_NODE_NOT_FOUND, f"node {binding.node} does not exist"
        )
    held = node.find(key)
    if held is not None:
        if held.uid == pod.uid:
            return Step(state)
        return _refuse(
            state,
            binding,
            ctx,
            REASON_ALREADY_BOUND,
            f"pod {key} is already bound to node {node.name} as uid {held.uid!r}, "
            f"so uid {pod.uid!r} cannot be bound until it is deleted",
        )
    if bound_elsewhere is not None and bound_elsewhere != node.name:
        return _refuse(
            state,
            binding,
            ctx,
            REASON_ALREADY_BOUND,
            f"pod {key} is already bound to node {bound_elsewhere}",
        )
    if node.node.unschedulable:
        return _refuse(
            state,
            binding,
            ctx,
            REASON_NODE_UNSCHEDULABLE,
            f"node {node.name} is cordoned (unschedulable)",
        )
    shortfalls = _shortfalls(node, pod.requests)
    if shortfalls:
        return _refuse(
            state,
            binding,
            ctx,
            REASON_NODE_OVERCOMMITTED,
            f"binding pod {key} would overcommit node {node.name}: " + "; ".join(shortfalls),
        )
    settings = run_settings(
        pod.annotations, ctx, conf.start_delay_seconds, conf.start_jitter_seconds
    )
    sim = SimPod(
        key=key,
        uid=pod.uid,
        job=pod.job,
        task=pod.task,
        requests={name: pod.requests[name] for name in sorted(pod.requests)},
        seq=node.seq + 1,
        phase=PodPhase.PENDING,
        bound_at=ctx.now,
        starts_at=ctx.now + timedelta(seconds=settings.start_delay),
        run_seconds=settings.run_seconds,
        exit_code=settings.exit_code,
        invalid=settings.invalid,
        grace_seconds=grace(pod.termination_grace_period_seconds),
    )
    message = f"bound to node {node.name}"
    if sim.starts_at <= ctx.now and not sim.invalid:
        # no start delay: the pod is Running as it is bound, one status instead of two
        # (Pending on the node, then Running at the same instant); its reason is still
        # the binding's
        sim = msgspec.structs.replace(sim, phase=PodPhase.RUNNING, started_at=ctx.now)
        message += " and started"
    event = _phase_event(
        sim, node.name, sim.phase, at=ctx.now, reason=REASON_BOUND, message=message
    )
    return Step(with_pod_added(node, sim), (event,))


def _shortfalls(node: SimNode, requests: Resources) -> list[str]:
    """Describe every dimension on which ``requests`` do not fit the node's free capacity."""
    allocatable = node.node.allocatable
    out = []
    for name, amount in demand(requests).items():
        if amount <= 0 or (name == PODS and PODS not in allocatable):
            continue
        total = allocatable.get(name, 0)
        used = node.used.get(name, 0)
        if used + amount > total:
            free = max(total - used, 0)
            out.append(
                f"{name} requested {format_quantity(name, amount)}, "
                f"free {format_quantity(name, free)} of {format_quantity(name, total)} allocatable"
            )
    return out


def _refuse(
    state: SimNode | None, binding: BindingCreated, ctx: Ctx, reason: str, message: str
) -> Step[SimNode | None]:
    pod = binding.pod
    key = pod_key(pod.namespace, pod.name)
    refused = BindingRefused(
        event_id=derive_event_id(
            tag_of(BindingRefused), key, f"{binding.node}|{binding.event_id}|{reason}"
        ),
        occurred_at=ctx.now,
        pod=key,
        job=pod.job,
        task=pod.task,
        node=binding.node,
        reason=reason,
        message=message,
        pod_uid=pod.uid,
    )
    return Step(state, (refused,))


# --- pods -------------------------------------------------------------------------------


def _evict(state: SimNode | None, request: PodEvictionRequested, ctx: Ctx) -> Step[SimNode | None]:
    """Start a pod's grace period; it ends ``Evicted`` when the period is over."""
    node = _live(state, request.node)
    at = node.index(request.pod) if node is not None else None
    if node is None or at is None:
        return Step(state)
    pod = node.pods[at]
    if (request.pod_uid and pod.uid != request.pod_uid) or not pod.is_active or pod.evict_at:
        return Step(state)
    message = request.message or f"{request.reason} by {request.taker}"
    evicting = msgspec.structs.replace(
        pod, evict_at=ctx.now + timedelta(seconds=pod.grace_seconds), evict_message=message
    )
    moved = with_pods_moved(node, {at: evicting})
    if pod.grace_seconds <= 0:
        return _advance(moved, ctx.now)
    return Step(moved)


def _delete(state: SimNode | None, key: PodKey, uid: str) -> Step[SimNode | None]:
    at = state.index(key) if state is not None else None
    if state is None or at is None or (uid and state.pods[at].uid != uid):
        return Step(state)
    return Step(with_pod_removed(state, at))


def _advance(state: SimNode | None, now: datetime) -> Step[SimNode | None]:
    """Make every transition due by ``now``, emitting them in time order."""
    if state is None:
        return Step(state)
    events: list[tuple[datetime, PodKey, int, PodPhaseChanged]] = []
    moved: dict[int, SimPod] = {}
    earliest: datetime | None = None
    for at, pod in enumerate(state.pods):
        due = pod.due_at
        if due is not None and due <= now:
            current = pod
            order = 0
            while due is not None and due <= now:
                current, event = _timed_transition(current, state.name, due)
                events.append((due, current.key, order, event))
                order += 1
                due = current.due_at
            moved[at] = current
        if due is not None and (earliest is None or due < earliest):
            earliest = due
    if not moved:
        return Step(state)
    events.sort(key=lambda item: item[:3])
    advanced = with_due_at(with_pods_moved(state, moved), earliest)
    return Step(advanced, tuple(item[3] for item in events))


def _timed_transition(pod: SimPod, node: NodeName, at: datetime) -> tuple[SimPod, PodPhaseChanged]:
    if pod.evict_at is not None and pod.evict_at <= at:
        event = _phase_event(
            pod, node, PodPhase.FAILED, at=at, reason=REASON_EVICTED, message=pod.evict_message
        )
        return msgspec.structs.replace(pod, phase=PodPhase.FAILED, finished_at=at), event
    if pod.phase is PodPhase.PENDING and pod.invalid:
        event = _phase_event(
            pod, node, PodPhase.FAILED, at=at, reason=REASON_INVALID_ANNOTATION, message=pod.invalid
        )
        return msgspec.structs.replace(pod, phase=PodPhase.FAILED, finished_at=at), event
    if pod.phase is PodPhase.PENDING:
        event = _phase_event(pod, node, PodPhase.RUNNING, at=at, reason=REASON_STARTED)
        return msgspec.structs.replace(pod, phase=PodPhase.RUNNING, started_at=at), event
    phase = PodPhase.SUCCEEDED if pod.exit_code == 0 else PodPhase.FAILED
    reason = REASON_COMPLETED if pod.exit_code == 0 else REASON_ERROR
    message = f"ran {pod.run_seconds:g}s, exit code {pod.exit_code}"
    event = _phase_event(
        pod, node, phase, at=at, reason=reason, exit_code=pod.exit_code, message=message
    )
    return msgspec.structs.replace(pod, phase=phase, finished_at=at), event


def _set_phase(
    state: SimNode | None, request: PodPhaseSetRequested, ctx: Ctx
) -> Step[SimNode | None]:
    at = state.index(request.pod) if state is not None else None
    if state is None or at is None:
        return Step(state)
    pod = state.pods[at]
    if not pod.is_active or pod.phase == request.phase:
        return Step(state)
    match request.phase:
        case PodPhase.RUNNING:
            moved = msgspec.structs.replace(pod, phase=PodPhase.RUNNING, started_at=ctx.now)
            exit_code = None
            reason = request.reason or REASON_STARTED
        case PodPhase.SUCCEEDED | PodPhase.FAILED:
            succeeded = request.phase is PodPhase.SUCCEEDED
            exit_code = (0 if succeeded else 1) if request.exit_code is None else request.exit_code
            moved = msgspec.structs.replace(
                pod, phase=request.phase, exit_code=exit_code, finished_at=ctx.now
            )
            reason = request.reason or (REASON_COMPLETED if succeeded else REASON_ERROR)
        case PodPhase.PENDING | PodPhase.UNKNOWN:
            return Step(state)
        case _:
            assert_never(request.phase)
    event = _phase_event(
        pod,
        state.name,
        request.phase,
        at=ctx.now,
        reason=reason,
        exit_code=exit_code,
        message=request.message,
    )
    return Step(with_pods_moved(state, {at: moved}), (event,))


def _phase_event(
    pod: SimPod,
    node: NodeName,
    phase: PodPhase,
    *,
    at: datetime,
    reason: str,
    exit_code: int | None = None,
    message: str = "",
) -> PodPhaseChanged:
    """Build a pod's phase change; its id names the incarnation (uid, node, seq) and phase."""
    return PodPhaseChanged(
        event_id=derive_event_id(_PHASE_KIND, pod.key, f"{pod.uid}|{node}|{pod.seq}|{phase}"),
        occurred_at=at,
        pod=pod.key,
        job=pod.job,
        task=pod.task,
        node=node,
        phase=phase,
        exit_code=exit_code,
        reason=reason,
        message=message,
        pod_uid=pod.uid,
    )


# --- nodes ------------------------------------------------------------------------------


def _live(state: SimNode | None, name: str) -> SimNode | None:
    """Return the state when it is a present node of that name."""
    if state is None or state.removed or state.name != name:
        return None
    return state


def _add_node(state: SimNode | None, node: Node, ctx: Ctx) -> Step[SimNode | None]:
    if state is None or state.removed:
        generation = 1 if state is None else state.generation + 1
        seq = 0 if state is None else state.seq
        added = SimNode(node=node, generation=generation, seq=seq)
        registered = NodeRegistered(
            event_id=_node_event_id(NodeRegistered, node.name, generation),
            occurred_at=ctx.now,
            node=node,
        )
        return Step(added, (registered,))
    if state.node == node:
        return Step(state)
    return _changed(state, node, ctx)


def _cordon(
    state: SimNode | None, name: NodeName, ctx: Ctx, *, unschedulable: bool
) -> Step[SimNode | None]:
    node = _live(state, name)
    if node is None or node.node.unschedulable == unschedulable:
        return Step(state)
    return _changed(node, msgspec.structs.replace(node.node, unschedulable=unschedulable), ctx)


def _changed(state: SimNode, node: Node, ctx: Ctx) -> Step[SimNode | None]:
    generation = state.generation + 1
    changed = NodeChanged(
        event_id=_node_event_id(NodeChanged, node.name, generation),
        occurred_at=ctx.now,
        node=node,
    )
    return Step(msgspec.structs.replace(state, node=node, generation=generation), (changed,))


def _remove_node(state: SimNode | None, name: NodeName, ctx: Ctx) -> Step[SimNode | None]:
    node = _live(state, name)
    if node is None:
        return Step(state)
    generation = node.generation + 1
    lost = tuple(
        _phase_event(
            pod,
            node.name,
            PodPhase.FAILED,
            at=ctx.now,
            reason=REASON_NODE_LOST,
            message=f"node {node.name} was removed",
        )
        for pod in node.pods
        if pod.is_active
    )
    removed = NodeRemoved(
        event_id=_node_event_id(NodeRemoved, node.name, generation),
        occurred_at=ctx.now,
        name=node.name,
    )
    tombstone = SimNode(node=node.node, generation=generation, removed=True, seq=node.seq)
    return Step(tombstone, (*lost, removed))


def _node_event_id(kind: type[Event], name: str, generation: int) -> str:
    return derive_event_id(tag_of(kind), name, generation)


_PHASE_KIND = tag_of(PodPhaseChanged)

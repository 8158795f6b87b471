"""The agent's pure core: what to do on a binding, an eviction, a deletion, a report.

One state per agent (:class:`AgentState`: the pods bound to its node, by uid). Each input
returns an :class:`Outcome`: the new state, the events to publish on ``pods.status`` (the
same reasons, fields and ids the simulated cluster uses, so every reader and the
job-controller's lifecycle policies work unchanged) and the actions the shell performs
(:class:`Stop`, :class:`Forget`).

- ``BindingCreated`` for this node: accepted when the pod's requests fit the node's free
  allocatable and its host ports can be allocated; ``Pending`` (reason ``Bound``) with
  the node's address and the pod's host ports, so that its peers learn them. A binding of a
  pod already here (same uid) changes nothing; nor does a binding of a pod already deleted
  (read again after a crash once the pod was forgotten, or made as the pod was deleted):
  it no longer exists, and nothing of it runs again. A binding of a pod that
  ``pods.status`` shows bound to (or running on) another node is refused ``AlreadyBound``,
  as the simulated cluster refuses it: two allocators that both believed they held the
  lease bound one pod to two agents. Another node's binding is not this agent's (the agent
  reads only its own). Refused otherwise, as the simulated cluster refuses.
- The shell starts a bound pod once its job's template and every peer it needs are known
  (:func:`launched`), or fails it (:func:`failed_to_start`).
- A supervisor's report (:func:`observe`): ``Running`` (reason ``Started``), then
  ``Succeeded`` (exit 0) or ``Failed`` with the exit code and the supervisor's reason
  (``Error``, ``OOMKilled``, ``DeadlineExceeded``); a pod stopped for an eviction ends
  ``Failed``/``Evicted`` with the eviction's message; a supervisor gone without a final
  report: ``Failed``/``Lost``. Each restart of a container is published with its
  ``restart_count``; a pod that waits to start (its image's pull backing off) is published
  ``Pending`` with the supervisor's reason and message, once per change.
- ``PodEvictionRequested``: :class:`Stop` (SIGTERM, grace period, SIGKILL, by the
  supervisor); the pod holds its resources until it has ended.
- ``PodDeleted``: :class:`Stop`, then :class:`Forget` once the supervisor has ended;
  nothing is published (as the simulated cluster: the pod no longer exists).

Ids derive from the pod's uid, the node, its binding number, the phase and the restart
count, so a step re-run after a crash publishes the same ids.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

import msgspec

from vcbus.contracts import reasons as codes
from vcbus.contracts._base import Event, derive_event_id, tag_of
from vcbus.contracts.events.bindings import BindingCreated, PodEvictionRequested
from vcbus.contracts.events.pods import PodDeleted
from vcbus.contracts.events.pods_status import BindingRefused, PodPhaseChanged
from vcbus.contracts.keys import NodeName, pod_key
from vcbus.contracts.objects.pod import (
    DEFAULT_GRACE_SECONDS,
    POD_ALREADY_BOUND,
    POD_BOUND,
    POD_COMPLETED,
    POD_ERROR,
    POD_EVICTED,
    POD_NODE_OVERCOMMITTED,
    POD_STARTED,
    PodPhase,
)
from vcbus.contracts.quantity import PODS, Resources, format_quantity
from vcbus.services.agent.model import AgentPod, AgentState, PodReport, StopCause
from vcbus.services.agent.ports import PortsExhaustedError, allocate
from vcbus.services.agent.validate import REASON_INVALID_BINDING, pod_error

REASON_STARTED = POD_STARTED
REASON_COMPLETED = POD_COMPLETED
REASON_ERROR = POD_ERROR
REASON_EVICTED = POD_EVICTED
REASON_LOST = codes.REASON_LOST
REASON_NODE_OVERCOMMITTED = POD_NODE_OVERCOMMITTED
REASON_ALREADY_BOUND = POD_ALREADY_BOUND
REASON_PORTS_EXHAUSTED = codes.REASON_PORTS_EXHAUSTED
REASON_POD_USERS_EXHAUSTED = codes.REASON_POD_USERS_EXHAUSTED
NOT_ENFORCED = "limits not enforced (no cgroups)"


@dataclass(frozen=True, slots=True)
class AgentConf:
    """The node the agent runs: its name, address, capacity, port range and limits."""

    node: str
    host_ip: str
    allocatable: Resources
    port_range: tuple[int, int] = (30000, 32767)
    limits_enforced: bool = True
    pod_users: tuple[int, int] | None = None
    """The uids (and gids, the same numbers) pods run as, one of its own per pod; None: the
    policy's run-as user for every pod."""


@dataclass(frozen=True, slots=True)
class Stop:
    """Ask the pod's supervisor to stop it (SIGTERM, grace, SIGKILL)."""

    uid: str


@dataclass(frozen=True, slots=True)
class Forget:
    """Remove the pod's directory and cgroup; its ports are free."""

    uid: str


Action = Stop | Forget


@dataclass(frozen=True, slots=True)
class Outcome:
    """The new state, the events to publish, the actions to perform, in order."""

    state: AgentState
    emit: tuple[Event, ...] = ()
    actions: tuple[Action, ...] = field(default=())


def bind(
    state: AgentState,
    binding: BindingCreated,
    conf: AgentConf,
    now: datetime,
    *,
    wanted_ports: Sequence[int],
    busy_ports: Collection[int] = (),
    deleted: Collection[str] = (),
    bound_elsewhere: str | None = None,
    trace: tuple[tuple[str, str], ...] = (),
) -> Outcome:
    """Accept or refuse a binding to this node.

    ``busy_ports`` are host ports some other process of the host holds (its listeners and
    connections, as the shell found them): they are not handed out either. ``deleted``:
    the uids of pods whose deletion the agent has read; such a pod is not bound again.
    ``bound_elsewhere``: the other node ``pods.status`` shows this very pod (its uid)
    bound to or running on, if any.
    """
    pod = binding.pod
    if binding.node != conf.node:
        return Outcome(state)
    problem = pod_error(pod)
    if problem:
        # its fields become paths, a cgroup and a user here: out of their format, nothing
        # of it is kept or started, whoever wrote the binding
        message = f"binding to node {conf.node} refused: {problem}"
        return Outcome(state, (_refused(binding, REASON_INVALID_BINDING, message, now),))
    held = state.pods.get(pod.uid)
    if held is not None:
        # read again (the agent stopped before the offset was committed): the same status,
        # the same id, in case it was not published
        if held.phase is not PodPhase.PENDING or held.launched:
            return Outcome(state)
        return Outcome(state, (_bound(held, conf, now),))
    if pod.uid in deleted:
        # the pod is gone: its binding read again after a kill -9 (the offset was not
        # committed) once its deletion had made the agent forget it, or bound as it was
        # deleted; running it would run it twice, or run a pod that no longer exists
        return Outcome(state)
    key = pod_key(pod.namespace, pod.name)
    if bound_elsewhere is not None and bound_elsewhere != conf.node:
        message = f"pod {key} is already bound to node {bound_elsewhere}"
        return Outcome(state, (_refused(binding, REASON_ALREADY_BOUND, message, now),))
    shortfalls = _shortfalls(state, conf, pod.requests)
    if shortfalls:
        message = f"binding pod {key} would overcommit node {conf.node}: " + "; ".join(shortfalls)
        return Outcome(state, (_refused(binding, REASON_NODE_OVERCOMMITTED, message, now),))
    try:
        ports = allocate(
            wanted_ports, state.ports_used() | set(busy_ports), conf.port_range, start=state.seq * 7
        )
    except PortsExhaustedError as exc:
        return Outcome(state, (_refused(binding, REASON_PORTS_EXHAUSTED, str(exc), now),))
    user = None
    if conf.pod_users is not None:
        user = pod_user(state, conf.pod_users)
        if user is None:
            low, high = conf.pod_users
            message = f"every pod uid of node {conf.node} ({low}-{high}) is held by a pod"
            return Outcome(state, (_refused(binding, REASON_POD_USERS_EXHAUSTED, message, now),))
    grace = pod.termination_grace_period_seconds
    held = AgentPod(
        key=key,
        uid=pod.uid,
        name=pod.name,
        namespace=pod.namespace,
        job=pod.job,
        task=pod.task,
        index=pod.index,
        seq=state.seq + 1,
        requests=dict(pod.requests),
        bound_at=now,
        ports=ports,
        grace_seconds=float(DEFAULT_GRACE_SECONDS if grace is None else max(grace, 0)),
        trace=trace,
        user=user,
        admitted_digest=pod.admitted_digest,
    )
    pods = {**state.pods, pod.uid: held}
    return Outcome(AgentState(seq=held.seq, pods=pods), (_bound(held, conf, now),))


def pod_user(state: AgentState, users: tuple[int, int]) -> int | None:
    """A uid of ``users`` no pod here holds, None when all are held.

    Taken round the range from the node's binding number, so a uid just freed is the last
    one given again (a file the last pod left in a shared place is not the next pod's).
    """
    low, high = users
    size = high - low + 1
    held = {pod.user for pod in state.pods.values()}
    for step in range(size):
        candidate = low + (state.seq + step) % size
        if candidate not in held:
            return candidate
    return None


def _bound(pod: AgentPod, conf: AgentConf, now: datetime) -> PodPhaseChanged:
    message = f"bound to node {conf.node}"
    if not conf.limits_enforced:
        message += f"; {NOT_ENFORCED}"
    return _phase(pod, conf, PodPhase.PENDING, now, reason=POD_BOUND, message=message)


def launched(state: AgentState, uid: str) -> Outcome:
    """Note that the pod's supervisor is started: the shell never starts it twice."""
    pod = state.pods.get(uid)
    if pod is None or pod.launched:
        return Outcome(state)
    return Outcome(_with(state, msgspec.structs.replace(pod, launched=True)))


def failed_to_start(
    state: AgentState, uid: str, conf: AgentConf, now: datetime, *, reason: str, message: str
) -> Outcome:
    """End a pod that cannot start here (no command, peers never known, ...)."""
    pod = state.pods.get(uid)
    if pod is None or pod.launched or not pod.is_active:
        return Outcome(state)
    event = _phase(pod, conf, PodPhase.FAILED, now, reason=reason, message=message)
    ended = msgspec.structs.replace(pod, phase=PodPhase.FAILED, launched=True)
    forget = (Forget(uid),) if pod.stop is StopCause.DELETED else ()
    return Outcome(_with(state, ended), (event,), forget)


def observe(
    state: AgentState, uid: str, report: PodReport | None, conf: AgentConf, now: datetime
) -> Outcome:
    """Publish what the pod's supervisor reports; ``None``: the supervisor is gone."""
    pod = state.pods.get(uid)
    if pod is None or not pod.launched:
        return Outcome(state)
    if not pod.is_active:
        forget = (Forget(uid),) if pod.stop is StopCause.DELETED else ()
        return Outcome(state, (), forget)
    if report is None and pod.stop is StopCause.DELETED:
        return Outcome(state, (), (Forget(uid),))  # nothing of it is left to stop
    if report is None:
        message = f"the supervisor of pod {pod.key} on node {conf.node} is gone"
        return _end(
            state,
            pod,
            conf,
            now,
            PodPhase.FAILED,
            reason=REASON_LOST,
            exit_code=None,
            message=message,
        )
    events: list[Event] = []
    current = pod
    restarted = report.restart_count != current.restart_count
    if report.ran and (current.phase is PodPhase.PENDING or (restarted and not report.is_final)):
        current = msgspec.structs.replace(
            current, phase=PodPhase.RUNNING, restart_count=report.restart_count
        )
        message = f"started on node {conf.node}"
        if not conf.limits_enforced:
            message += f"; {NOT_ENFORCED}"
        events.append(
            _phase(current, conf, PodPhase.RUNNING, now, reason=REASON_STARTED, message=message)
        )
    waiting = f"{report.reason}: {report.message}" if report.reason else ""
    if not report.ran and not report.is_final and waiting != current.waiting:
        # waiting to start (an image pull backing off): said while the pod is Pending
        current = msgspec.structs.replace(current, waiting=waiting)
        if waiting:
            events.append(
                _phase(
                    current,
                    conf,
                    PodPhase.PENDING,
                    now,
                    reason=report.reason,
                    message=report.message,
                    detail=waiting,
                )
            )
    if not report.is_final:
        return Outcome(_with(state, current), tuple(events))
    current = msgspec.structs.replace(current, restart_count=report.restart_count)
    if current.stop is StopCause.DELETED:
        ended = msgspec.structs.replace(current, phase=report.phase)
        return Outcome(_with(state, ended), tuple(events), (Forget(uid),))
    if current.stop is StopCause.EVICTED:
        phase, reason, message = PodPhase.FAILED, REASON_EVICTED, current.stop_message
    else:
        phase = report.phase
        reason = report.reason or (
            REASON_COMPLETED if phase is PodPhase.SUCCEEDED else REASON_ERROR
        )
        message = report.message or f"exit code {report.exit_code}"
    outcome = _end(
        state,
        current,
        conf,
        now,
        phase,
        reason=reason,
        exit_code=report.exit_code,
        message=message,
    )
    return Outcome(outcome.state, (*events, *outcome.emit), outcome.actions)


def evict(state: AgentState, request: PodEvictionRequested, conf: AgentConf) -> Outcome:
    """Stop an evicted pod; it ends ``Failed``/``Evicted`` once its processes are gone."""
    pod = state.by_key(request.pod)
    if (
        request.node != conf.node
        or pod is None
        or (request.pod_uid and pod.uid != request.pod_uid)
        or not pod.is_active
        or pod.stop is not StopCause.NONE
    ):
        return Outcome(state)
    message = request.message or f"{request.reason} by {request.taker}"
    stopping = msgspec.structs.replace(pod, stop=StopCause.EVICTED, stop_message=message)
    if not pod.launched:
        return _end(
            state,
            stopping,
            conf,
            request.occurred_at,
            PodPhase.FAILED,
            reason=REASON_EVICTED,
            exit_code=None,
            message=message,
        )
    return Outcome(_with(state, stopping), (), (Stop(pod.uid),))


def delete(state: AgentState, deleted: PodDeleted) -> Outcome:
    """Stop a deleted pod's processes, then forget it; nothing is published.

    A deletion naming no uid applies to the incarnations bound before it was made (read
    again from the start of ``pods``, an old deletion never ends a pod that reused the name).
    """
    found = [
        pod
        for pod in state.pods.values()
        if pod.key == deleted.pod
        and (pod.uid == deleted.pod_uid if deleted.pod_uid else deleted.occurred_at >= pod.bound_at)
    ]
    pods = dict(state.pods)
    actions: list[Action] = []
    for pod in found:
        if pod.stop is StopCause.DELETED:
            continue
        pods[pod.uid] = msgspec.structs.replace(pod, stop=StopCause.DELETED)
        if pod.launched and pod.is_active:
            actions.append(Stop(pod.uid))
        else:
            actions.append(Forget(pod.uid))
    if not actions:
        return Outcome(state)
    return Outcome(msgspec.structs.replace(state, pods=pods), (), tuple(actions))


def forgotten(state: AgentState, uid: str) -> AgentState:
    """The state without the pod (its directory removed, its ports free)."""
    if uid not in state.pods:
        return state
    return msgspec.structs.replace(
        state, pods={key: pod for key, pod in state.pods.items() if key != uid}
    )


def used(state: AgentState) -> Resources:
    """What the active pods hold: their requests, one ``pods`` slot each."""
    total: dict[str, int] = {}
    for pod in state.pods.values():
        if pod.is_active:
            for name, amount in pod.requests.items():
                if name != PODS:
                    total[name] = total.get(name, 0) + amount
            total[PODS] = total.get(PODS, 0) + 1
    return total


def _end(
    state: AgentState,
    pod: AgentPod,
    conf: AgentConf,
    now: datetime,
    phase: PodPhase,
    *,
    reason: str,
    exit_code: int | None,
    message: str,
) -> Outcome:
    event = _phase(pod, conf, phase, now, reason=reason, exit_code=exit_code, message=message)
    return Outcome(_with(state, msgspec.structs.replace(pod, phase=phase)), (event,))


def _with(state: AgentState, pod: AgentPod) -> AgentState:
    return msgspec.structs.replace(state, pods={**state.pods, pod.uid: pod})


def _shortfalls(state: AgentState, conf: AgentConf, requests: Mapping[str, int]) -> list[str]:
    """Each dimension on which ``requests`` do not fit the node's free allocatable."""
    held = used(state)
    demand = {name: amount for name, amount in requests.items() if name != PODS}
    demand[PODS] = 1
    out = []
    for name, amount in sorted(demand.items()):
        if amount <= 0 or (name == PODS and PODS not in conf.allocatable):
            continue
        total = conf.allocatable.get(name, 0)
        taken = held.get(name, 0)
        if taken + amount > total:
            out.append(
                f"{name} requested {format_quantity(name, amount)}, free "
                f"{format_quantity(name, max(total - taken, 0))} of "
                f"{format_quantity(name, total)} allocatable"
            )
    return out


def _refused(binding: BindingCreated, reason: str, message: str, now: datetime) -> BindingRefused:
    pod = binding.pod
    key = pod_key(pod.namespace, pod.name)
    return BindingRefused(
        event_id=derive_event_id(
            tag_of(BindingRefused), key, f"{binding.node}|{binding.event_id}|{reason}"
        ),
        occurred_at=now,
        pod=key,
        job=pod.job,
        task=pod.task,
        node=binding.node,
        reason=reason,
        message=message,
        pod_uid=pod.uid,
    )


def _phase(
    pod: AgentPod,
    conf: AgentConf,
    phase: PodPhase,
    now: datetime,
    *,
    reason: str,
    exit_code: int | None = None,
    message: str = "",
    detail: str = "",
) -> PodPhaseChanged:
    """A pod's phase change, with the address and host ports its peers reach it at.

    ``detail``: what tells this one from another of the same phase (a waiting reason).
    """
    generation = f"{pod.uid}|{conf.node}|{pod.seq}|{phase}|{pod.restart_count}"
    if detail:
        generation += f"|{detail}"
    return PodPhaseChanged(
        event_id=derive_event_id(_PHASE_KIND, pod.key, generation),
        occurred_at=now,
        pod=pod.key,
        job=pod.job,
        task=pod.task,
        node=NodeName(conf.node),
        phase=phase,
        exit_code=exit_code,
        reason=reason,
        message=message,
        pod_uid=pod.uid,
        restart_count=pod.restart_count,
        host_ip=conf.host_ip,
        ports=dict(pod.ports),
    )


_PHASE_KIND = tag_of(PodPhaseChanged)

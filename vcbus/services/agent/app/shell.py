"""Wiring of the node agent: bindings of its node in; pods.status and nodes out.

One agent per host owns one real node (docs/design.md#real-nodes). It consumes ``bindings`` in a
group of its own (``vcbus-agent-<node>``: every partition, offsets kept across restarts) and acts on
those for its node; it follows ``jobs.admitted`` (the task templates and plugins),
``pods.status`` (its peers' addresses and host ports) and ``pods`` (deletions) as tables.

Its state (:class:`AgentState`) is a file of its data directory, written at each change;
the pods' own records are written by their supervisors (:mod:`vcbus.services.agent.app.runtime`).
What the agent publishes goes out before the state that says it was published is saved
(a crash in between publishes the same event ids again, which readers drop), as the
delivery loop does for services.

Beside the consumer run:

- the pod loop (every :data:`LOOP_SECONDS`): starts each bound pod once its job's template
  and every peer it needs are known (or fails it after ``peer_wait_seconds``), publishes
  what the supervisors report, applies deletions, forgets what has ended and was deleted;
  each publication continues the pod's job trace (``agent.start``, ``agent.exit``, ...);
- the heartbeat: ``NodeRegistered`` at start, then ``NodeHeartbeat`` every
  ``heartbeat_seconds``;
- the HTTP(S) server of the pods' logs (:mod:`vcbus.services.agent.app.logserver`).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import msgspec
import structlog

from vcbus.contracts import (
    BindingCreated,
    Event,
    JobAdmitted,
    PodCreated,
    PodDeleted,
    PodEvictionRequested,
    PodPhaseChanged,
    Topic,
)
from vcbus.contracts import reasons as codes
from vcbus.contracts._base import derive_event_id, tag_of
from vcbus.contracts.events.nodes import NodeHeartbeat, NodeRegistered
from vcbus.contracts.keys import JobKey, NodeName
from vcbus.contracts.objects.job import Job
from vcbus.contracts.objects.node import Node
from vcbus.contracts.objects.pod import Pod, PodPhase
from vcbus.core.authority import Trust
from vcbus.core.bus.envelope import Envelope
from vcbus.core.bus.errors import RecordRefusedError
from vcbus.core.bus.records import Record
from vcbus.core.bus.router import Route
from vcbus.core.runtime.clock import Clock
from vcbus.core.runtime.service import Runtime, Service
from vcbus.core.runtime.table import Table
from vcbus.core.tracing.spans import context_of, job_span
from vcbus.services.agent import core
from vcbus.services.agent.app import podfs
from vcbus.services.agent.app.cgroups import Cgroups
from vcbus.services.agent.app.logserver import LogServer, ServerOptions
from vcbus.services.agent.app.runtime import HostProcesses, PodRuntime, host_ports_in_use
from vcbus.services.agent.authority import LaunchGate, LaunchRefusedError
from vcbus.services.agent.core import Action, AgentConf, Forget, Outcome, Stop
from vcbus.services.agent.launch import Placement, PlanError, Policy, host_paths, plan_pod
from vcbus.services.agent.model import AgentPod, AgentState, StopCause
from vcbus.services.agent.peers import PeerBook
from vcbus.services.agent.plugins import Peer, pod_ports
from vcbus.services.agent.validate import REASON_INVALID_SPEC

NAME = "agent"
LOOP_SECONDS = 0.05
LIVENESS_SECONDS = 2.0
"""How often a running pod's supervisor is checked alive when its report did not change."""
DELETIONS_KEPT = 50_000
"""How many of the newest pod deletions the agent remembers (by uid), so that a binding of
a deleted pod is never run: one read again after a crash, once the pod was forgotten."""
JOB_WAIT_SECONDS = 10.0
"""How long a binding waits for its job's admission to be read (it was admitted first)."""
STATE_FILE = "agent.json"
REASON_PEERS_UNKNOWN = codes.REASON_PEERS_UNKNOWN

log = structlog.get_logger("vcbus.agent")

_state_decoder = msgspec.json.Decoder(AgentState)
_encoder = msgspec.json.Encoder()


@dataclass(frozen=True)
class AgentOptions:
    """Everything an agent is started with."""

    conf: AgentConf
    node: Node
    data_dir: Path
    policy: Policy
    heartbeat_seconds: float = 10.0
    peer_wait_seconds: float = 120.0
    server: ServerOptions = field(default_factory=ServerOptions)
    cgroups: Cgroups | None = None
    """Where pods' cgroups go; None: limits not enforced."""
    limits_reason: str = ""
    """Why limits are not enforced (empty when they are)."""
    trust: Trust | None = None
    """The keys of admission and the allocator this node trusts; None: launches unverified."""
    runtime: str = ""
    """``podman``: pods' containers run in their images; empty: as host processes."""
    runtime_reason: str = ""
    """Why pods run as host processes (empty when they run in containers)."""


class Agent:
    """The agent's state, its views of the topics and its pods' runtime."""

    def __init__(self, options: AgentOptions, runtime: PodRuntime, clock: Clock) -> None:
        self.options = options
        self.conf = options.conf
        self.runtime = runtime
        self.clock = clock
        self.state = load_state(options.data_dir)
        self.gate = LaunchGate(options.trust)
        self.jobs: dict[JobKey, Job] = {}
        self.peer_book = PeerBook()
        """The pods of each job's current incarnation and where they are (its peers)."""
        self.deletions: collections.deque[PodDeleted] = collections.deque()
        self.deleted: dict[str, None] = {}
        """The uids of the newest :data:`DELETIONS_KEPT` deleted pods, oldest first."""
        self.lock = asyncio.Lock()
        self.job_read = asyncio.Event()
        self.bound = asyncio.Event()
        self._checked: dict[str, float] = {}

    # --- views -----------------------------------------------------------------------

    def on_job(self, event: Event, _record: Record) -> None:
        """Keep each admitted job's newest spec."""
        if isinstance(event, JobAdmitted):
            self.gate.admit(event)  # raises for a job admission did not sign: dead-lettered
            self.jobs[event.job] = event.manifest
            self.job_read.set()

    def on_status(self, event: Event, _record: Record) -> None:
        """Keep each pod uid's newest status (its node, address and host ports)."""
        if isinstance(event, PodPhaseChanged):
            self.peer_book.on_status(event, self.deleted)

    def on_pod(self, event: Event, _record: Record) -> None:
        """Note a creation for the peers; queue a deletion for the pod loop, remember its uid."""
        if isinstance(event, PodCreated):
            self.peer_book.on_created(event)
        elif isinstance(event, PodDeleted):
            self.peer_book.on_deleted(event)
            self.deletions.append(event)
            if event.pod_uid:
                self.deleted[event.pod_uid] = None
                if len(self.deleted) > DELETIONS_KEPT:
                    del self.deleted[next(iter(self.deleted))]

    # --- bindings ----------------------------------------------------------------------

    async def on_binding(self, envelope: Envelope[Event]) -> Sequence[Event]:
        """Accept, refuse or evict; the outputs go out with the route's process span."""
        event = envelope.event
        if isinstance(event, BindingCreated):
            if event.node != self.conf.node:
                return ()
            job = await self._authorized(event)
            wanted = [port.container_port for port in pod_ports(job, event.pod.task)] if job else []
            trace = tuple(
                (name, value.decode(errors="replace")) for name, value in envelope.headers
            )
            async with self.lock:
                outcome = core.bind(
                    self.state,
                    event,
                    self.conf,
                    self.clock.now(),
                    wanted_ports=wanted,
                    busy_ports=host_ports_in_use(*self.conf.port_range) if wanted else (),
                    deleted=self.deleted,
                    bound_elsewhere=self._bound_elsewhere(event.pod),
                    trace=trace,
                )
                self._adopt(outcome)
            self.bound.set()  # the pod loop starts it now, not at its next pass
            return outcome.emit
        if isinstance(event, PodEvictionRequested):
            async with self.lock:
                outcome = core.evict(self.state, event, self.conf)
                self._adopt(outcome)
            return outcome.emit
        return ()

    def _bound_elsewhere(self, pod: Pod) -> str | None:
        """The other node ``pods.status`` last showed this pod (its uid) on, if any.

        Bound there (``Pending`` with a node) or running there.
        """
        status = self.peer_book.status_of(pod.job, pod.uid)
        if (
            status is None
            or status.node is None
            or status.node == self.conf.node
            or status.phase not in (PodPhase.PENDING, PodPhase.RUNNING)
        ):
            return None
        return str(status.node)

    async def _authorized(self, binding: BindingCreated) -> Job | None:
        """The admitted manifest a binding names, once its launch authority is checked.

        A binding the allocator did not sign, or one naming a spec admission did not sign
        for its job, starts nothing: it is dead-lettered with its reason.
        """
        try:
            self.gate.check_binding(binding)
            job = await self._job(binding.pod.job, binding.pod.admitted_digest)
            if self.gate.enabled and binding.pod.job in self.jobs:
                self.gate.check_spec(binding)
        except LaunchRefusedError as exc:
            log.warning("binding_refused", reason=exc.reason, message=str(exc))
            raise RecordRefusedError(f"{exc.reason}: {exc}") from None
        return job

    def _known(self, key: JobKey, digest: str) -> bool:
        return self.gate.knows(key, digest) if self.gate.enabled else key in self.jobs

    async def _job(self, key: JobKey, digest: str = "") -> Job | None:
        until = time.monotonic() + JOB_WAIT_SECONDS
        while not self._known(key, digest) and time.monotonic() < until:
            self.job_read.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.job_read.wait(), until - time.monotonic())
        return self.gate.manifest(key, digest, self.jobs)

    # --- the pod loop ------------------------------------------------------------------

    async def loop(self, runtime: Runtime) -> None:
        """Start, watch and clear pods until the service stops."""
        await runtime.ready.wait()
        try:
            while True:
                try:
                    await self.step(runtime)
                except Exception:
                    # the loop goes on; the pod stays as it was, and is tried again
                    log.exception("agent_step_failed")
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.bound.wait(), LOOP_SECONDS)
                self.bound.clear()
        finally:
            self.runtime.close()

    async def step(self, runtime: Runtime) -> None:
        """One pass: deletions, then each pod's start or report."""
        async with self.lock:
            while self.deletions:
                self._adopt(core.delete(self.state, self.deletions.popleft()))
            for uid in list(self.state.pods):
                pod = self.state.pods.get(uid)
                if pod is None:
                    continue
                if not pod.launched and pod.is_active and pod.stop is StopCause.NONE:
                    await self._try_start(runtime, pod)
                elif pod.launched and (pod.is_active or pod.stop is StopCause.DELETED):
                    await self._watch(runtime, pod)

    async def _try_start(self, runtime: Runtime, pod: AgentPod) -> None:
        now = self.clock.now()
        waited = (now - pod.bound_at).total_seconds()
        job = self.gate.manifest(pod.job, pod.admitted_digest, self.jobs)
        if job is None:
            if waited >= self.options.peer_wait_seconds:
                message = f"job {pod.job} of pod {pod.key} was never read from jobs.admitted"
                await self._fail(runtime, pod, "JobUnknown", message)
            return
        if self.conf.pod_users is not None and pod.user is None:
            # bound before this agent gave each pod a uid: it would run as the agent's own
            message = f"pod {pod.key} was bound without a uid of its own (--pod-uids)"
            await self._fail(runtime, pod, core.REASON_POD_USERS_EXHAUSTED, message)
            return
        placement = Placement(
            node=self.conf.node,
            host_ip=self.conf.host_ip,
            pod_dir=str(self.runtime.files_dir(pod.uid)),
            work_dir=str(self.runtime.work_dir(pod.uid)),
            user=pod.user,
            resolved_paths=resolve_paths(host_paths(job, pod.task)),
            runtime=self.options.runtime,
        )
        try:
            plan, grants = plan_pod(
                job, _pod(pod), self._peers(pod), placement, self.options.policy
            )
        except PlanError as exc:
            await self._fail(runtime, pod, exc.reason, str(exc))
            return
        if grants.missing:
            if waited >= self.options.peer_wait_seconds:
                names = ", ".join(f"{task}-{index}" for task, index in grants.missing)
                message = (
                    f"peers of pod {pod.key} not bound after {self.options.peer_wait_seconds:g}s "
                    f"(their addresses and ports unknown): {names}"
                )
                await self._fail(runtime, pod, REASON_PEERS_UNKNOWN, message)
            return
        try:
            with job_span(
                "agent.start", context_of(_headers(pod)), pod=pod.key, node=self.conf.node
            ):
                self.runtime.start(plan, grants.files)
        except ValueError as exc:  # a name that is not one directory entry: nothing started
            await self._fail(runtime, pod, REASON_INVALID_SPEC, str(exc))
            return
        log.info("pod_started", pod=pod.key, uid=pod.uid, job=pod.job)
        self._adopt(core.launched(self.state, pod.uid))

    async def _watch(self, runtime: Runtime, pod: AgentPod) -> None:
        now = time.monotonic()
        changed = self.runtime.changed(pod.uid)
        if not changed and now - self._checked.get(pod.uid, 0.0) < LIVENESS_SECONDS:
            return
        self._checked[pod.uid] = now
        report = self.runtime.report(pod.uid)
        if report is None:
            # its supervisor is gone without a final report (killed -9): what it ran may run
            # on; it is killed before the pod is said Lost (or forgotten)
            self.runtime.kill(pod.uid)
        outcome = core.observe(self.state, pod.uid, report, self.conf, self.clock.now())
        await self._publish(runtime, pod, outcome.emit)
        self._adopt(outcome)

    async def _fail(self, runtime: Runtime, pod: AgentPod, reason: str, message: str) -> None:
        outcome = core.failed_to_start(
            self.state, pod.uid, self.conf, self.clock.now(), reason=reason, message=message
        )
        log.warning("pod_not_started", pod=pod.key, reason=reason, message=message)
        await self._publish(runtime, pod, outcome.emit)
        self._adopt(outcome)

    async def _publish(self, runtime: Runtime, pod: AgentPod, events: Sequence[Event]) -> None:
        """Publish a pod's events in a span continuing its job's trace."""
        if not events:
            return
        last = events[-1]
        name = (
            "agent.exit"
            if isinstance(last, PodPhaseChanged)
            and last.phase in (PodPhase.SUCCEEDED, PodPhase.FAILED)
            else "agent.running"
        )
        with job_span(name, context_of(_headers(pod)), pod=pod.key, node=self.conf.node):
            await runtime.publish(events)

    # --- state -------------------------------------------------------------------------

    def _adopt(self, outcome: Outcome) -> None:
        """Take the outcome's state, save it, perform its actions."""
        self.state = outcome.state
        for action in outcome.actions:
            self._perform(action)
        save_state(self.options.data_dir, self.state)

    def _perform(self, action: Action) -> None:
        match action:
            case Stop(uid=uid):
                pod = self.state.pods.get(uid)
                with job_span("agent.stop", context_of(_headers(pod) if pod else ()), uid=uid):
                    self.runtime.stop(uid)
            case Forget(uid=uid):
                pod = self.state.pods.get(uid)
                self.runtime.forget(uid, keep_logs_as=pod.key if pod else "")
                self.state = core.forgotten(self.state, uid)
                self._checked.pop(uid, None)

    def _peers(self, pod: AgentPod) -> list[Peer]:
        """The pods of the pod's incarnation of its job whose address and ports are known."""
        here = [
            (
                held.uid,
                Peer(
                    task=held.task,
                    index=held.index,
                    address=self.conf.host_ip,
                    ports=held.ports,
                    node=self.conf.node,
                ),
            )
            for held in self.state.pods.values()
            if held.job == pod.job and held.is_active and held.stop is StopCause.NONE
        ]
        return self.peer_book.peers(pod.job, pod.key, pod.uid, here)

    # --- the node ----------------------------------------------------------------------

    async def heartbeat(self, runtime: Runtime) -> None:
        """Register the node, then say it is alive every ``heartbeat_seconds``."""
        await runtime.ready.wait()
        started = self.clock.now()
        node = self.options.node
        registered = NodeRegistered(
            event_id=derive_event_id(tag_of(NodeRegistered), node.name, started.isoformat()),
            occurred_at=started,
            node=node,
        )
        await runtime.publish([registered])
        log.info(
            "node_registered",
            node=node.name,
            address=self.conf.host_ip,
            limits_enforced=self.conf.limits_enforced,
            limits=self.options.limits_reason or "cpu quota and memory limit per pod",
            runtime=self.options.runtime or f"process ({self.options.runtime_reason})",
            launch_authority=(
                "verified (signed by admission and the allocator)"
                if self.gate.enabled
                else "NOT verified: no trust file, any bus writer can start a pod here"
            ),
        )
        interval = self.options.heartbeat_seconds
        while True:
            now = self.clock.now()
            beat = NodeHeartbeat(
                event_id=derive_event_id(tag_of(NodeHeartbeat), node.name, now.isoformat()),
                occurred_at=now,
                name=NodeName(node.name),
                node=node,
                at=now,
                interval_seconds=interval,
                limits_enforced=self.conf.limits_enforced,
            )
            await runtime.publish([beat])
            await asyncio.sleep(interval)

    async def serve_logs(self, runtime: Runtime) -> None:
        """Serve the pods' logs until the service stops."""
        server = LogServer(self.options.server, self)
        await server.serve(runtime.stopping)


def build_service(options: AgentOptions, clock: Clock) -> tuple[Service, Agent]:
    """The agent of one node, as a service, and the agent itself (tests look into it)."""
    runtime = HostProcesses(
        options.data_dir,
        options.cgroups,
        containers=options.conf.node if options.runtime else "",
    )
    swept = runtime.sweep()
    if swept:
        log.warning("containers_removed", pods=swept, why="no pod of this agent's holds them")
    agent = Agent(options, runtime, clock)
    service = Service(
        name=f"{NAME}-{options.conf.node}",
        routes=[Route(Topic.BINDINGS, agent.on_binding, "agent.bind")],
        tables=[
            Table("jobs", [Topic.JOBS_ADMITTED], agent.on_job, only=[JobAdmitted]),
            Table("statuses", [Topic.PODS_STATUS], agent.on_status, only=[PodPhaseChanged]),
            Table("pods", [Topic.PODS], agent.on_pod, only=[PodCreated, PodDeleted]),
        ],
        tasks=[agent.loop, agent.heartbeat, agent.serve_logs],
    )
    return service, agent


def load_state(data_dir: Path) -> AgentState:
    """The agent's state as last saved, or an empty one."""
    try:
        return _state_decoder.decode((data_dir / STATE_FILE).read_bytes())
    except FileNotFoundError:
        return AgentState()


def save_state(data_dir: Path, state: AgentState) -> None:
    """Save the state whole (a crash leaves the old file or the new one), mode 0600."""
    podfs.write_whole(data_dir / STATE_FILE, _encoder.encode(state))


def resolve_paths(paths: Sequence[str]) -> dict[str, str]:
    """Each path as the host resolves it (its links followed): what a ``hostPath`` names."""
    return {path: os.path.realpath(path) for path in paths}


def _headers(pod: AgentPod) -> list[tuple[str, bytes]]:
    return [(name, value.encode()) for name, value in pod.trace]


def _pod(pod: AgentPod) -> Pod:
    """The pod as the launch plan reads it."""
    return Pod(
        name=pod.name,
        namespace=pod.namespace,
        job=pod.job,
        task=pod.task,
        index=pod.index,
        podgroup="",
        uid=pod.uid,
        termination_grace_period_seconds=int(pod.grace_seconds),
    )

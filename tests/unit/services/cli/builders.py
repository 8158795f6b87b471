"""Events of the status topics, as the services publish them, for the read commands' tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from vcbus.contracts import (
    BindingCreated,
    BindingRefused,
    Event,
    JobAdmitted,
    JobKey,
    JobRejected,
    JobStatusChanged,
    NodeHeartbeat,
    NodeName,
    NodeRegistered,
    NodesLocked,
    PodCreated,
    PodDeleted,
    PodGroupConditionsChanged,
    PodGroupCreated,
    PodGroupPhaseChanged,
    PodKey,
    PodPhaseChanged,
    QueueDeclared,
    TargetJobElected,
    TaskCounts,
    Violation,
)
from vcbus.contracts.objects import (
    Condition,
    Job,
    JobPhase,
    Node,
    Pod,
    PodGroup,
    PodGroupPhase,
    PodPhase,
    Queue,
)
from vcbus.contracts.objects.job import JobSpec, TaskSpec
from vcbus.core.bus.kafka_settings import KafkaSettings
from vcbus.core.bus.memory import InMemoryBus
from vcbus.core.bus.outbox import event_record
from vcbus.core.bus.records import Record
from vcbus.core.runtime.settings import Settings
from vcbus.services.cli.status_store import StatusStore

PREFIX = "t."
NOW = datetime(2026, 1, 1, tzinfo=UTC)

SETTINGS = Settings(kafka=KafkaSettings(bootstrap_servers="unused"), topic_prefix=PREFIX)


async def publish(bus: InMemoryBus, *events: Event) -> None:
    await bus.producer(client_id="test").send([event_record(e, PREFIX) for e in events])


def build_status(
    key: str, phase: str, *, at: int = 0, reason: str = "", message: str = "", running: int = 0
) -> JobStatusChanged:
    return JobStatusChanged(
        event_id=f"{key}-{phase}-{at}",
        occurred_at=NOW + timedelta(seconds=at),
        job=JobKey(key),
        phase=JobPhase(phase),
        min_available=2,
        pending=2 - running,
        running=running,
        task_status_count={"worker": TaskCounts(pending=2 - running, running=running)},
        conditions=(Condition(type=phase, reason=reason or phase, message=message),),
        trace_id="0af7651916cd43dd8448eb211c80319c",
    )


def build_admitted(key: str) -> JobAdmitted:
    spec = JobSpec(queue="default", tasks=(TaskSpec(name="worker", replicas=2, min_available=2),))
    return JobAdmitted(
        event_id=f"{key}-a",
        occurred_at=NOW,
        job=JobKey(key),
        manifest=Job(spec=spec),
        spec_digest="d",
    )


def build_rejected(key: str, *, at: int = 0) -> JobRejected:
    return JobRejected(
        event_id=f"{key}-r{at}",
        occurred_at=NOW + timedelta(seconds=at),
        job=JobKey(key),
        violations=(
            Violation(
                path="spec.tasks[0].replicas",
                reason="NegativeReplicas",
                message="replicas must be >= 0",
            ),
        ),
        payload="{}",
    )


def build_podgroup(key: str, *, queue: str = "default") -> PodGroupCreated:
    namespace, name = key.split("/")
    group = PodGroup(
        name=f"{name}-pg", namespace=namespace, job=JobKey(key), queue=queue, min_member=2
    )
    return PodGroupCreated(event_id=f"{key}-pg", occurred_at=NOW, podgroup=group)


def build_phase(
    key: str, phase: PodGroupPhase, *, reason: str = "", message: str = ""
) -> PodGroupPhaseChanged:
    conditions = (
        (Condition(type="Unschedulable", reason=reason, message=message),) if reason else ()
    )
    return PodGroupPhaseChanged(
        event_id=f"{key}-{phase}-{reason}",
        occurred_at=NOW,
        job=JobKey(key),
        podgroup=f"{key.split('/')[1]}-pg",
        phase=phase,
        conditions=conditions,
    )


def build_allocator_condition(key: str, reason: str, message: str) -> PodGroupConditionsChanged:
    return PodGroupConditionsChanged(
        event_id=f"{key}-c-{reason}",
        occurred_at=NOW,
        job=JobKey(key),
        podgroup=f"{key.split('/')[1]}-pg",
        conditions=(Condition(type="Unschedulable", reason=reason, message=message),),
    )


def build_pod(key: str, index: int, *, uid: str = "") -> Pod:
    namespace, name = key.split("/")
    return Pod(
        name=f"{name}-worker-{index}",
        namespace=namespace,
        job=JobKey(key),
        task="worker",
        index=index,
        podgroup=f"{name}-pg",
        uid=uid or f"{name}-{index}-u1",
    )


def pod_created(pod: Pod) -> PodCreated:
    return PodCreated(event_id=f"{pod.uid}-c", occurred_at=NOW, pod=pod)


def pod_bound(pod: Pod, node: str) -> BindingCreated:
    return BindingCreated(event_id=f"{pod.uid}-b", occurred_at=NOW, pod=pod, node=NodeName(node))


def pod_phase(pod: Pod, phase: str, node: str = "") -> PodPhaseChanged:
    return PodPhaseChanged(
        event_id=f"{pod.uid}-{phase}",
        occurred_at=NOW,
        pod=PodKey(f"{pod.namespace}/{pod.name}"),
        job=pod.job,
        task=pod.task,
        node=NodeName(node) if node else None,
        phase=PodPhase(phase),
        pod_uid=pod.uid,
    )


def pod_refused(pod: Pod, node: str) -> BindingRefused:
    return BindingRefused(
        event_id=f"{pod.uid}-r",
        occurred_at=NOW,
        pod=PodKey(f"{pod.namespace}/{pod.name}"),
        job=pod.job,
        task=pod.task,
        node=NodeName(node),
        reason="NodeOvercommitted",
        pod_uid=pod.uid,
    )


def pod_deleted(pod: Pod) -> PodDeleted:
    return PodDeleted(
        event_id=f"{pod.uid}-d",
        occurred_at=NOW,
        job=pod.job,
        pod=PodKey(f"{pod.namespace}/{pod.name}"),
        task=pod.task,
        pod_uid=pod.uid,
    )


def build_node(name: str) -> NodeRegistered:
    node = Node(name=name, allocatable={"cpu": 4000, "memory": 8 << 30, "pods": 110})
    return NodeRegistered(event_id=f"{name}-r", occurred_at=NOW, node=node)


def heartbeat(name: str, seconds: float, *, limits_enforced: bool = True) -> NodeHeartbeat:
    """A real node's heartbeat ``seconds`` after ``NOW``, every 10 s."""
    at = NOW + timedelta(seconds=seconds)
    return NodeHeartbeat(
        event_id=f"{name}-hb-{seconds}",
        occurred_at=at,
        name=NodeName(name),
        node=build_node(name).node,
        at=at,
        limits_enforced=limits_enforced,
    )


def build_queue(name: str, **fields: object) -> QueueDeclared:
    return QueueDeclared(event_id=f"{name}-q", occurred_at=NOW, queue=Queue(name=name, **fields))  # type: ignore[arg-type]


def elected(
    key: str, generation: int, *, reason: str = "", until: datetime | None = None
) -> TargetJobElected:
    return TargetJobElected(
        event_id=f"{key}-e{generation}",
        occurred_at=NOW,
        job=JobKey(key),
        generation=generation,
        reason=reason,
        until=until,
    )


def locked(
    key: str,
    nodes: tuple[str, ...],
    generation: int,
    *,
    reason: str = "",
    until: datetime | None = None,
) -> NodesLocked:
    return NodesLocked(
        event_id=f"{key}-l{generation}",
        occurred_at=NOW,
        job=JobKey(key),
        nodes=tuple(NodeName(n) for n in nodes),
        generation=generation,
        reason=reason,
        until=until,
    )


def store_of(*events: Event) -> StatusStore:
    """A status store that folded ``events``, in order, as records of partition 0."""
    store = StatusStore(PREFIX)
    for offset, event in enumerate(events):
        out = event_record(event, PREFIX)
        store.fold(Record(out.topic, 0, offset, out.key, out.value, out.headers))
    return store

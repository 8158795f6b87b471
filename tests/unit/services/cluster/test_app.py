"""The cluster service on the in-memory bus: a pod runs on one node at a time."""

from __future__ import annotations

from tests.support.bus_contract import read_topic, running
from tests.unit.services.cluster.builders import build_binding, build_node, build_pod
from vcbus.contracts import TOPIC_SPECS, Event, Topic
from vcbus.contracts.events.bindings import BindingCreated
from vcbus.contracts.events.pods_status import BindingRefused, PodPhaseChanged
from vcbus.contracts.objects.pod import ANNOTATION_RUN_SECONDS, PodPhase
from vcbus.core.bus.codec import TopicCodec
from vcbus.core.bus.kafka_settings import KafkaSettings
from vcbus.core.bus.memory import InMemoryBus
from vcbus.core.bus.outbox import event_record
from vcbus.core.runtime.clock import SystemClock
from vcbus.core.runtime.settings import Settings
from vcbus.core.runtime.topology import ensure_topics
from vcbus.services.cluster.app import build_service
from vcbus.services.cluster.core import REASON_ALREADY_BOUND

PREFIX = "unit."
CODEC = TopicCodec[Event](TOPIC_SPECS[Topic.PODS_STATUS].union)


async def _statuses(bus: InMemoryBus, want: int) -> list[object]:
    records = await read_topic(bus, f"{PREFIX}{Topic.PODS_STATUS}", want=want)
    return [event for record in records for event in _events(record.value)]


def _events(value: bytes | None) -> tuple[Event, ...]:
    decoded = CODEC.decode_all(value)
    assert isinstance(decoded, tuple), decoded
    return decoded


async def _run(bindings_in_turn: list[tuple[BindingCreated, int]]) -> list[object]:
    """Send each binding once the pods.status topic holds the given count; return it all."""
    bus = InMemoryBus()
    settings = Settings(kafka=KafkaSettings(bootstrap_servers="memory"), topic_prefix=PREFIX)
    service = build_service(settings, SystemClock(), nodes=[build_node("n1"), build_node("n2")])
    await ensure_topics(bus, [service], PREFIX, settings.partitions)
    producer = bus.producer(client_id="test")
    async with running(service, bus, settings):
        await read_topic(bus, f"{PREFIX}{Topic.NODES}", want=2)
        for binding, wait_for in bindings_in_turn:
            await _statuses(bus, want=wait_for)
            await producer.send([event_record(binding, PREFIX)])
        total = bindings_in_turn[-1][1] + 1
        statuses = await _statuses(bus, want=total)
    await producer.stop()
    return statuses


async def test_a_binding_of_a_pod_running_on_another_node_is_refused_as_already_bound():
    pod = build_pod()

    statuses = await _run([(build_binding(pod, "n1"), 0), (build_binding(pod, "n2"), 1)])

    running_, refused = statuses[:2]
    assert isinstance(running_, PodPhaseChanged)
    assert (running_.node, running_.phase, running_.reason) == ("n1", PodPhase.RUNNING, "Bound")
    assert isinstance(refused, BindingRefused)
    assert (refused.node, refused.reason) == ("n2", REASON_ALREADY_BOUND)
    assert "n1" in refused.message


async def test_a_pod_whose_earlier_incarnation_ended_on_another_node_is_bound():
    first = build_pod(uid="uid-1", annotations={ANNOTATION_RUN_SECONDS: "0"})
    second = build_pod(uid="uid-2")

    statuses = await _run([(build_binding(first, "n1"), 0), (build_binding(second, "n2"), 2)])

    ended = statuses[1]
    assert isinstance(ended, PodPhaseChanged)
    assert ended.phase is PodPhase.SUCCEEDED
    bound = statuses[2]
    assert isinstance(bound, PodPhaseChanged)
    assert (bound.node, bound.phase, bound.pod_uid) == ("n2", PodPhase.RUNNING, "uid-2")

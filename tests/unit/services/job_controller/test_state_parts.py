"""A job's state in records of at most 1 MiB: the job's own, then parts of its pods.

Through the changelog store on the in-memory bus: what is written, what a new replica
restores, what a step rewrites, and that a record written whole before still reads.
"""

from __future__ import annotations

import msgspec

from tests.unit.services.job_controller.builders import Driver, build_job, build_task
from vcbus.contracts.objects.pod import PodPhase
from vcbus.core.bus.memory import InMemoryBus
from vcbus.core.bus.records import OutRecord, TopicConfig
from vcbus.core.runtime.reactor import Entry
from vcbus.core.state.changelog import ChangelogStore
from vcbus.services.job_controller.pod_index import replace_pod, summary
from vcbus.services.job_controller.state import JobRecord, RecordCodec

TOPIC = "unit.job-controller.jobs.changelog"
KEY = "default/job"


def _record(pods: int) -> JobRecord:
    driver = Driver(build_job(build_task("w", pods)))
    driver.start()
    return driver.current


def _store(per_part: int = 4) -> ChangelogStore[Entry[JobRecord]]:
    store = ChangelogStore[Entry[JobRecord]](
        "jobs", Entry[JobRecord], codec=RecordCodec(Entry[JobRecord], per_part)
    )
    store.bind(TOPIC)
    return store


async def _restored(bus: InMemoryBus, writes: list[OutRecord]) -> ChangelogStore[Entry[JobRecord]]:
    producer = bus.producer(client_id="t")
    await producer.send(writes)
    await producer.stop()
    store = _store()
    await store.restore(bus, [0], client_id="restore")
    return store


async def test_a_job_of_ten_pods_is_written_as_its_record_and_three_parts_and_restored() -> None:
    record = _record(10)
    store = _store()
    store.put(0, KEY, Entry[JobRecord](state=record, seen=("a",)))
    writes = store.take_writes()

    assert [w.key for w in writes] == [f"{KEY}#part/{n}".encode() for n in (1, 2, 3)] + [
        KEY.encode()
    ]
    head = msgspec.json.decode(writes[-1].value or b"")
    assert (head["state"]["pods"], head["state"]["parts"]) == ([], 3)

    bus = InMemoryBus()
    await bus.ensure_topics([TopicConfig(TOPIC, 1)])
    restored = await _restored(bus, writes)
    assert restored.get(0, KEY) == Entry[JobRecord](state=record, seen=("a",))


async def test_a_step_rewrites_the_changed_part_and_deletes_the_parts_a_smaller_job_lacks() -> None:
    record = _record(10)
    store = _store()
    store.put(0, KEY, Entry[JobRecord](state=record))
    store.take_writes()

    first = record.pods[0]
    running = msgspec.structs.replace(first, phase=PodPhase.RUNNING, node="n1")
    changed = msgspec.structs.replace(record, pods=(running, *record.pods[1:]))
    store.put(0, KEY, Entry[JobRecord](state=changed))
    assert [w.key for w in store.take_writes()] == [f"{KEY}#part/1".encode(), KEY.encode()]

    smaller = msgspec.structs.replace(
        changed, pods=changed.pods[:5], incarnations=dict(list(changed.incarnations.items())[:5])
    )
    store.put(0, KEY, Entry[JobRecord](state=smaller))
    writes = store.take_writes()
    assert [(w.key, w.value is None) for w in writes] == [
        (f"{KEY}#part/2".encode(), False),
        (f"{KEY}#part/3".encode(), True),
        (KEY.encode(), False),
    ]


async def test_a_state_written_whole_before_parts_reads_as_it_did() -> None:
    record = _record(10)
    whole = Entry[JobRecord](state=record, seen=("old",))
    bus = InMemoryBus()
    await bus.ensure_topics([TopicConfig(TOPIC, 1)])
    old = ChangelogStore[Entry[JobRecord]]("jobs", Entry[JobRecord])
    old.bind(TOPIC)
    old.put(0, KEY, whole)
    (written,) = old.take_writes()

    restored = await _restored(bus, [written])
    assert restored.get(0, KEY) == whole


def test_a_job_within_one_part_is_one_record_as_before() -> None:
    entry = Entry[JobRecord](state=_record(4))
    assert RecordCodec(Entry[JobRecord], 4).encode(entry) == [msgspec.json.encode(entry)]


def test_a_summary_derived_pod_by_pod_is_the_one_counted_from_scratch() -> None:
    pods = _record(12).pods
    phases = [PodPhase.RUNNING, PodPhase.SUCCEEDED, PodPhase.FAILED, PodPhase.PENDING]
    for step in range(40):
        old = pods[(step * 7) % len(pods)]
        new = msgspec.structs.replace(
            old, phase=phases[step % 4], restarts=old.restarts + step % 3, refused=step % 5 == 0
        )
        pods = replace_pod(pods, new)
        fresh = pods[:1] + pods[1:]  # another tuple of the same pods: counted afresh
        assert fresh is not pods
        assert summary(pods) == summary(fresh)
    assert summary(pods).positions[pods[5].name] == 5

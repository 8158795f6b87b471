"""A failed chaos run's per-job history, read from a real broker: every record about the job.

``tests.chaos.run.job_histories`` reads every topic of the run, changelogs and dead
letters included, and keeps per job the records keyed by it or naming it, each topic in
partition and offset order, so a run that fails can be diagnosed from its artefacts.
"""

from __future__ import annotations

import dataclasses
import json

from tests.chaos.run import job_histories
from vcbus.contracts import Topic
from vcbus.core.bus.kafka import AioKafkaBus
from vcbus.core.bus.kafka_settings import KafkaSettings
from vcbus.core.bus.records import OutRecord
from vcbus.core.runtime.clock import SystemClock
from vcbus.core.runtime.settings import Settings
from vcbus.core.runtime.topology import changelog_topic, ensure_topics
from vcbus.services.cluster.app import build_service as build_cluster
from vcbus.services.job_controller.app import build_service as build_job_controller


async def test_every_record_keyed_by_a_job_or_naming_it_is_in_its_history_in_order(
    kafka_bootstrap: str, topic_prefix: str
) -> None:
    bus = AioKafkaBus(KafkaSettings(bootstrap_servers=kafka_bootstrap))
    settings = dataclasses.replace(
        Settings.from_env({}, bootstrap=kafka_bootstrap), topic_prefix=topic_prefix
    )
    services = [
        build_job_controller(settings, SystemClock()),
        build_cluster(settings, SystemClock()),
    ]
    await ensure_topics(bus, services, topic_prefix, 2)
    admitted, bindings = f"{topic_prefix}{Topic.JOBS_ADMITTED}", f"{topic_prefix}{Topic.BINDINGS}"
    state = changelog_topic(topic_prefix, "job-controller", "jobs")
    producer = bus.producer(client_id="test")
    try:
        await producer.send(
            [
                OutRecord(
                    state, b"chaos/a", json.dumps({"phase": "Pending"}).encode(), partition=0
                ),
                OutRecord(admitted, b"chaos/a", b'{"n": 1}', partition=0),
                OutRecord(admitted, b"chaos/ab", b'{"job": "chaos/ab"}', partition=0),
                OutRecord(bindings, b"node-1", b'{"job": "chaos/a", "n": 2}', partition=1),
                OutRecord(bindings, b"node-1", b'{"job": "chaos/b"}', partition=1),
                OutRecord(admitted, b"chaos/a", b"not json", partition=0),
            ]
        )
    finally:
        await producer.stop()

    found = await job_histories(bus, topic_prefix, ["chaos/a"])

    assert [(r["topic"], r["key"], r["value"]) for r in found["chaos/a"]] == [
        ("jobs.admitted", "chaos/a", {"n": 1}),
        ("jobs.admitted", "chaos/a", "not json"),
        ("bindings", "node-1", {"job": "chaos/a", "n": 2}),
        ("job-controller.jobs.changelog", "chaos/a", {"phase": "Pending"}),
    ]

"""Every service's ``/metrics`` after a run: the metrics the issue names, with sensible values.

The run: a gang that fits (bound, running), a gang too big for its queue (pending with a
reason), and one malformed record (dead-lettered). Then each service is scraped until what
it must show is there (bounded polls), and the values are checked against the run.
"""

from __future__ import annotations

import asyncio
import functools
import re
import socket

import pytest

from tests.support.served import SERVICES, ServedSystem, eventually, run_cli
from vcbus.contracts import PodGroupPhaseChanged, Topic, tag_of
from vcbus.core.bus.envelope import HEADER_EVENT_TYPE
from vcbus.core.bus.kafka import AioKafkaBus
from vcbus.core.bus.kafka_settings import KafkaSettings
from vcbus.core.bus.records import OutRecord

pytestmark = pytest.mark.slow

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]

GANG = """\
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: {name}
spec:
  tasks:
    - name: worker
      replicas: 2
      template:
        spec:
          containers:
            - name: worker
              image: busybox
              resources:
                requests: {{cpu: "{cpu}", memory: 1Gi}}
"""


def samples(text: str) -> Samples:
    """Every sample of a Prometheus text: (name, labels) → value."""
    out: Samples = {}
    for line in text.splitlines():
        match = re.fullmatch(r"([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)", line)
        if line.startswith("#") or match is None:
            continue
        labels = frozenset(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', match.group(2) or ""))
        out[(match.group(1), labels)] = float(match.group(3))
    return out


def value(found: Samples, name: str, **labels: str) -> float | None:
    return found.get((name, frozenset(labels.items())))


def scrape(system: ServedSystem, service: str) -> Samples:
    status, text = system.get(service, "/metrics")
    assert status == 200
    return samples(text)


def families(system: ServedSystem, service: str) -> set[str]:
    text = system.get(service, "/metrics")[1]
    return set(re.findall(r"^# TYPE (\S+) ", text, re.M))


async def publish_poison(system: ServedSystem) -> None:
    """A ``podgroups.status`` record of a known type that cannot be decoded."""
    tag = tag_of(PodGroupPhaseChanged).encode()
    record = OutRecord(
        f"{system.prefix}{Topic.PODGROUPS_STATUS}",
        b"default/poison",
        b"{not json",
        ((HEADER_EVENT_TYPE, tag),),
    )
    producer = AioKafkaBus(KafkaSettings(bootstrap_servers=system.bootstrap)).producer(
        client_id="poison"
    )
    try:
        await producer.send([record])
    finally:
        await producer.stop()


@pytest.fixture(scope="module")
def after_a_run(system: ServedSystem, tmp_path_factory: pytest.TempPathFactory) -> ServedSystem:
    folder = tmp_path_factory.mktemp("jobs")
    (folder / "fits.yaml").write_text(GANG.format(name="fits", cpu="1"))
    (folder / "huge.yaml").write_text(GANG.format(name="huge", cpu="6"))
    with pytest.MonkeyPatch.context() as monkeypatch:
        status, out, _ = run_cli(
            system, monkeypatch, "submit", str(folder / "fits.yaml"), "--wait", "--timeout", "60"
        )
        assert status == 0, out
        assert run_cli(system, monkeypatch, "submit", str(folder / "huge.yaml"))[0] == 0
    asyncio.run(publish_poison(system))

    def settled() -> bool:
        enqueue = scrape(system, "podgroup-enqueue")
        controller = scrape(system, "job-controller")
        return (
            value(enqueue, "vcbus_podgroups_pending", phase="Pending", reason="Infeasible") == 1
            and value(controller, "vcbus_records_dead_lettered_total", topic="podgroups.status")
            == 1
            and value(scrape(system, "allocator"), "vcbus_bindings_total") == 2
        )

    eventually(settled, "the run's metrics", system)
    return system


def test_every_family_is_exposed_and_probes_answer_when_a_run_is_over(after_a_run):
    for service in SERVICES:
        assert after_a_run.get(service, "/healthz") == (200, "ok\n")
        assert after_a_run.get(service, "/readyz") == (200, "ready\n")
        assert {
            "vcbus_cycle_duration_seconds",
            "vcbus_bindings_total",
            "vcbus_podgroups_pending",
            "vcbus_consumer_lag",
            "vcbus_records_dead_lettered_total",
            "vcbus_job_submit_to_gang_ready_seconds",
        } <= families(after_a_run, service)
        found = scrape(after_a_run, service)
        # no --instance given: a service names itself after its host, as a container would
        instance = socket.gethostname()
        assert value(found, "target_info", service_name=service, service_instance_id=instance) == 1


def test_cycles_bindings_and_pending_reasons_are_reported_when_a_run_is_over(after_a_run):
    for service in ("podgroup-enqueue", "allocator"):
        found = scrape(after_a_run, service)
        count = value(found, "vcbus_cycle_duration_seconds_count") or 0
        total = value(found, "vcbus_cycle_duration_seconds_sum")
        assert count >= 1
        assert total is not None
        assert 0 < total / count < 5.0  # a cycle on two jobs takes milliseconds, not seconds
        assert value(found, "vcbus_cycle_duration_seconds_bucket", le="+Inf") == count
    assert value(scrape(after_a_run, "allocator"), "vcbus_bindings_total") == 2
    pending = {
        dict(labels)["reason"]: v
        for (name, labels), v in scrape(after_a_run, "podgroup-enqueue").items()
        if name == "vcbus_podgroups_pending"
    }
    assert pending == {
        "Infeasible": 1
    }  # 2 x 6 cpu on two 4-cpu nodes (docs/design.md#pending-reasons)


def caught_up(system: ServedSystem, service: str) -> bool:
    """Whether every partition the service consumes shows a lag of 0."""
    found = scrape(system, service)
    lags = [v for (name, _), v in found.items() if name == "vcbus_consumer_lag"]
    return len(lags) >= 4 and all(lag == 0 for lag in lags)


def test_lag_records_and_dead_letters_are_reported_when_a_run_is_over(after_a_run):
    for service, topic in (
        ("admission", "jobs.submitted"),
        ("job-controller", "jobs.admitted"),
        ("cluster", "bindings"),
    ):
        eventually(
            functools.partial(caught_up, after_a_run, service),
            f"{service} lag back to 0 on every partition",
            after_a_run,
        )
        found = scrape(after_a_run, service)
        assert (value(found, "vcbus_records_consumed_total", topic=topic) or 0) >= 2
    controller = scrape(after_a_run, "job-controller")
    assert value(controller, "vcbus_records_dead_lettered_total", topic="podgroups.status") == 1
    assert (
        value(
            scrape(after_a_run, "admission"),
            "vcbus_records_dead_lettered_total",
            topic="jobs.submitted",
        )
        is None
    )


def test_submit_to_gang_ready_latency_is_recorded_when_a_gang_ran(after_a_run):
    found = scrape(after_a_run, "job-controller")
    assert value(found, "vcbus_job_submit_to_gang_ready_seconds_count") == 1  # only "fits" ran
    seconds = value(found, "vcbus_job_submit_to_gang_ready_seconds_sum")
    assert seconds is not None
    assert 0 < seconds < 60
    assert value(found, "vcbus_job_submit_to_gang_ready_seconds_bucket", le="60.0") == 1

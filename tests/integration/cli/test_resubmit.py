"""Resubmitting a job's name, on a real broker with the services running: ``submit`` says
what the submission does before publishing it, and a refused update, published past the
CLI, never replaces the spec or trace id ``describe`` shows for the job.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.served import ServedSystem, eventually, run_cli, served_system
from vcbus.contracts import Topic
from vcbus.core.bus.kafka import AioKafkaBus
from vcbus.core.bus.kafka_settings import KafkaSettings
from vcbus.core.bus.records import TopicPartition
from vcbus.core.runtime.clock import SystemClock
from vcbus.core.runtime.settings import Settings
from vcbus.services.cli.submit import publish
from vcbus.services.submission import records_for

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def system(kafka_bootstrap: str) -> Iterator[ServedSystem]:
    """Two simulated nodes of 4 CPU, under a topic prefix of this module's own."""
    prefix = f"t-{os.getpid()}-resubmit."
    cluster = ["--nodes", "2", "--node-cpu", "4", "--node-memory", "8Gi"]
    with served_system(kafka_bootstrap, prefix, cluster_args=cluster) as running:
        yield running


def job(*, replicas: int, cpu: str = "1", name: str = "resub") -> str:
    return f"""\
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: {name}
spec:
  tasks:
    - name: worker
      replicas: {replicas}
      template:
        spec:
          containers:
            - name: worker
              image: busybox
              resources:
                requests: {{cpu: "{cpu}", memory: 1Gi}}
"""


def submitted_records(system: ServedSystem) -> int:
    """How many records ``jobs.submitted`` holds."""
    topic = f"{system.prefix}{Topic.JOBS_SUBMITTED}"

    async def count() -> int:
        bus = AioKafkaBus(KafkaSettings(bootstrap_servers=system.bootstrap))
        consumer = bus.consumer([topic], group=None, client_id="t-count")
        try:
            await consumer.start()
            partitions = [TopicPartition(topic, n) for n in range(await bus.partitions(topic))]
            return sum((await consumer.end_offsets(partitions)).values())
        finally:
            await consumer.stop()

    return asyncio.run(count())


def test_submit_says_what_a_resubmission_does_and_a_refused_update_changes_nothing_shown(
    system: ServedSystem, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "resub.yaml"

    def submit(text: str) -> tuple[int, str, str]:
        path.write_text(text)
        return run_cli(system, monkeypatch, "submit", str(path))

    def described() -> str:
        return run_cli(system, monkeypatch, "describe", "job", "resub")[1]

    status, out, err = submit(job(replicas=2))
    assert (status, out.split(" trace_id=")[0], err) == (0, "job default/resub created", "")
    eventually(lambda: "Phase:            Running" in described(), "resub running", system)

    status, out, _ = submit(job(replicas=2))
    assert (status, out.split(" trace_id=")[0]) == (0, "job default/resub unchanged")

    status, out, _ = submit(job(replicas=3))
    assert (status, out.split(" trace_id=")[0]) == (
        0,
        "job default/resub updated "
        "(minAvailable, tasks[worker].replicas, tasks[worker].minAvailable)",
    )
    accepted_trace = out.split("trace_id=")[1].strip()
    eventually(lambda: "3 running" in described(), "the update's third pod running", system)

    before = submitted_records(system)
    status, out, err = submit(job(replicas=3, cpu="2"))
    assert (status, out) == (1, "")
    assert err.startswith(
        "vcbus submit: job default/resub: UpdateRejected: job updates may not change fields "
        "other than `minAvailable`, `tasks[*].replicas under spec` and `PriorityClassName`\n"
    )
    assert "nothing submitted" in err
    assert submitted_records(system) == before

    # the same refused update from another Kafka client: admitted, then refused by the
    # job-controller, whose status says so; the spec and trace shown stay the accepted ones
    settings = Settings.from_env()
    refused = records_for(job(replicas=1, cpu="2"), settings.topic_prefix, SystemClock().now())
    asyncio.run(publish(settings, [item.record for item in refused]))
    eventually(lambda: "UpdateRejected" in described(), "the refusal in describe", system)
    text = described()
    assert "Queue:" in text
    assert f"/trace/{accepted_trace}" in text, text
    assert refused[0].trace_id not in text
    tasks = text.split("Tasks:")[1].splitlines()
    assert tasks[2].split()[:2] == ["worker", "3"], text


def test_a_running_job_scaled_to_zero_keeps_running_with_no_pods(
    system: ServedSystem, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Volcano's update rule refuses only replicas < 0; its controller keeps the phase."""
    path = tmp_path / "zero.yaml"

    def submit(text: str) -> tuple[int, str, str]:
        path.write_text(text)
        return run_cli(system, monkeypatch, "submit", str(path))

    def described() -> str:
        return run_cli(system, monkeypatch, "describe", "job", "zero")[1]

    status, out, err = submit(job(replicas=0, name="zero"))
    assert (status, out) == (1, "")
    assert err.startswith(
        "vcbus submit: job default/zero: NoPods: the job has no pods: every task has 0 replicas\n"
    )

    status, out, _ = submit(job(replicas=2, name="zero"))
    assert (status, out.split(" trace_id=")[0]) == (0, "job default/zero created")
    eventually(lambda: "2 running" in described(), "both pods running", system)

    status, out, err = submit(job(replicas=0, name="zero"))
    assert (status, out.split(" trace_id=")[0], err) == (
        0,
        "job default/zero updated (minAvailable, tasks[worker].replicas, "
        "tasks[worker].minAvailable)",
        "",
    )
    eventually(lambda: "0 running" in described(), "the pods gone", system)
    text = described()
    assert "Phase:            Running" in text, text
    assert "UpdateRejected" not in text, text


def test_wait_ends_at_once_for_a_minimum_alone_over_its_queues_capability(
    system: ServedSystem, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A 2-CPU minimum in a 1-CPU queue can never be admitted: --wait says so, exit 1."""
    path = tmp_path / "capped.yaml"
    path.write_text(
        "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: tiny}\n"
        "spec: {weight: 1, capability: {cpu: '1'}}\n---\n"
        + job(replicas=2, name="capped").replace(
            "spec:\n  tasks:", "spec:\n  queue: tiny\n  tasks:"
        )
    )
    status, out, _ = run_cli(system, monkeypatch, "submit", str(path), "--wait", "--timeout", "60")
    assert status == 1, out
    last = out.strip().splitlines()[-1]
    assert "QueueOverCapability" in last, out
    assert last.endswith(
        "the job can never be admitted as it is (it cannot start until that changes)"
    ), out
    listed = run_cli(system, monkeypatch, "get", "jobs", "capped", "-o", "json")[1]
    assert '"admission": "Inadmissible"' in listed

"""The CLI against a running system on a real broker: submit, get, watch, describe, delete, queue,
garbage on the status topics, and user text with terminal escapes.

Services run as ``vcbus serve`` processes (``tests/support/served.py``); the CLI runs in the
test's process (``main``) or, for ``--watch``, as a process of its own. Waits are bounded
polls, never timing claims.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from tests.support.processes import Processes
from tests.support.served import eventually, run_cli
from vcbus.core.bus.kafka import AioKafkaBus
from vcbus.core.bus.kafka_settings import KafkaSettings
from vcbus.core.bus.records import OutRecord
from vcbus.core.runtime.clock import SystemClock
from vcbus.core.runtime.settings import Settings
from vcbus.services.cli.submit import publish
from vcbus.services.submission import records_for

pytestmark = pytest.mark.slow


def job(name: str, *, replicas: int = 2, cpu: str = "1", start_seconds: float = 0) -> str:
    """A gang of ``replicas`` workers; with ``start_seconds`` its pods start that much later."""
    return f"""\
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: {name}
spec:
  queue: default
  tasks:
    - name: worker
      replicas: {replicas}
      template:
        metadata:
          annotations:
            vcbus.io/start-seconds: "{start_seconds:g}"
        spec:
          containers:
            - name: worker
              image: busybox
              resources:
                requests: {{cpu: "{cpu}", memory: 1Gi}}
"""


@pytest.fixture
def manifest(tmp_path: Path):
    def write(name: str, text: str) -> str:
        path = tmp_path / f"{name}.yaml"
        path.write_text(text)
        return str(path)

    return write


def test_submit_wait_shows_progress_until_running_when_the_gang_fits(system, monkeypatch, manifest):
    status, out, _ = run_cli(
        system, monkeypatch, "submit", manifest("fits", job("fits")), "--wait", "--timeout", "60"
    )
    assert status == 0, out
    lines = out.splitlines()
    assert lines[0].startswith("job default/fits created trace_id=")
    assert lines[-1].startswith("default/fits: Running, PodGroup ")  # Inqueue or Running
    assert lines[-1].endswith(", 2 running (min available 2)")

    status, out, _ = run_cli(system, monkeypatch, "get", "pods", "-o", "json")
    pods = [p for p in json.loads(out)["items"] if p["job"] == "default/fits"]
    assert sorted(p["name"] for p in pods) == ["fits-worker-0", "fits-worker-1"]
    assert all(p["phase"] == "Running" and p["node"].startswith("node-") for p in pods)

    status, out, _ = run_cli(system, monkeypatch, "get", "nodes")
    assert [line.split()[0] for line in out.splitlines()] == ["NAME", "node-0", "node-1"]

    def podgroup_phase() -> str:
        _, text, _ = run_cli(system, monkeypatch, "get", "podgroups", "fits")
        rows = text.splitlines()[1:]
        return rows[0].split()[-2] if rows else ""  # PHASE (no REASON), then AGE

    eventually(lambda: podgroup_phase() == "Running", "PodGroup of fits listed Running", system)


def test_describe_names_the_reason_when_a_job_stays_pending(system, monkeypatch, manifest):
    status, out, _ = run_cli(system, monkeypatch, "submit", manifest("huge", job("huge", cpu="6")))
    assert status == 0
    trace_id = out.split("trace_id=")[1].strip()
    described: dict[str, str] = {}

    def reason_known() -> bool:
        code, text, _ = run_cli(system, monkeypatch, "describe", "job", "huge")
        described["text"] = text
        return code == 0 and "Pending Reason:   Infeasible" in text

    # 2 x 6 cpu on two 4-cpu nodes: it could never run (docs/design.md#reservation,
    # docs/design.md#pending-reasons).
    eventually(reason_known, "describe naming Infeasible", system)
    text = described["text"]
    assert "Phase:            Pending" in text
    assert "minResources cpu 12 exceed the whole cluster's cpu 8" in text
    assert f"Jaeger:           http://localhost:16686/trace/{trace_id}" in text

    status, out, _ = run_cli(system, monkeypatch, "get", "jobs", "huge")
    assert out.splitlines()[1].split()[-2] == "Infeasible"  # REASON, then AGE


def test_get_watch_shows_a_phase_change_when_a_job_starts(system, monkeypatch, manifest):
    with Processes() as processes:
        watch = processes.start(
            "watch", "vcbus.services.cli", "get", "jobs", "--watch", env=system.env()
        )
        watch.wait_for(lambda line: str(line.get("text", "")).startswith("NAMESPACE"))
        status, _, _ = run_cli(
            system, monkeypatch, "submit", manifest("slow", job("slow", start_seconds=4))
        )
        assert status == 0

        def row(phase: str):
            return lambda line: str(line.get("text", "")).split()[1:3] == ["slow", phase]

        pending = watch.wait_for(row("Pending"))
        running = watch.wait_for(row("Running"))
    assert pending["_seq"] < running["_seq"]


def test_delete_wait_returns_when_the_job_is_gone(system, monkeypatch, manifest):
    status, _, _ = run_cli(
        system, monkeypatch, "submit", manifest("gone", job("gone")), "--wait", "--timeout", "60"
    )
    assert status == 0
    status, out, _ = run_cli(
        system, monkeypatch, "delete", "job", "gone", "--wait", "--timeout", "60"
    )
    assert status == 0
    assert out.splitlines() == ["job default/gone delete requested", "job default/gone deleted"]
    status, out, err = run_cli(system, monkeypatch, "get", "jobs", "gone")
    assert (out, err) == ("", "No resources found\n")


def test_get_queues_shows_the_state_when_a_queue_is_created_and_closed(system, monkeypatch):
    status, out, _ = run_cli(
        system, monkeypatch, "queue", "create", "research", "--weight", "3", "--capability", "cpu=2"
    )
    assert (status, out) == (0, "queue research created\n")

    def state_of_research() -> str:
        _, text, _ = run_cli(system, monkeypatch, "get", "queues", "research", "-o", "json")
        items = json.loads(text)["items"]
        return str(items[0]["state"]) if items else ""

    eventually(lambda: state_of_research() == "Open", "queue research listed Open", system)
    status, out, _ = run_cli(system, monkeypatch, "queue", "close", "research")
    assert (status, out) == (0, "queue research closed\n")
    eventually(lambda: state_of_research() == "Closed", "queue research listed Closed", system)
    _, text, _ = run_cli(system, monkeypatch, "get", "queues", "research", "-o", "json")
    assert json.loads(text)["items"][0]["capability"] == {"cpu": "2"}
    assert run_cli(system, monkeypatch, "queue", "close", "nosuch")[0] == 1


def test_create_refuses_an_existing_queue_and_update_keeps_what_it_does_not_change(
    system, monkeypatch
):
    created = run_cli(system, monkeypatch, "queue", "create", "team", "--capability", "cpu=2")
    assert created == (0, "queue team created\n", "")

    def team() -> dict[str, object]:
        _, text, _ = run_cli(system, monkeypatch, "get", "queues", "team", "-o", "json")
        items = json.loads(text)["items"]
        return items[0] if items else {}

    eventually(lambda: team().get("capability") == {"cpu": "2"}, "queue team listed", system)
    assert run_cli(system, monkeypatch, "queue", "create", "team", "--weight", "5") == (
        1,
        "",
        'queue "team" already exists; change it with `vcbus queue update team ...` '
        "(what is not given is kept)\n",
    )
    assert run_cli(system, monkeypatch, "queue", "update", "team", "--weight", "5") == (
        0,
        "queue team updated\n",
        "",
    )
    eventually(lambda: team().get("weight") == 5, "queue team weight 5", system)
    assert team()["capability"] == {"cpu": "2"}
    assert run_cli(system, monkeypatch, "queue", "update", "team", "--weight", "5")[1] == (
        "queue team unchanged\n"
    )
    assert run_cli(system, monkeypatch, "queue", "update", "nosuch", "--weight", "2")[0] == 1


GARBAGE = (b"not json", b'{"type": "job.status_changed.v1", "job_key": 7}', b'{"type": "x.v9"}')


def publish_garbage(system, topic: str, key: str) -> None:
    records = [OutRecord(f"{system.prefix}{topic}", key.encode(), value) for value in GARBAGE]

    async def send() -> None:
        producer = AioKafkaBus(KafkaSettings(bootstrap_servers=system.bootstrap)).producer(
            client_id="garbage"
        )
        try:
            await producer.send(records)
        finally:
            await producer.stop()

    asyncio.run(send())


def test_garbage_keyed_like_a_job_or_a_node_hides_neither(system, monkeypatch, manifest):
    status, _, _ = run_cli(
        system, monkeypatch, "submit", manifest("twice", job("twice")), "--wait", "--timeout", "60"
    )
    assert status == 0
    publish_garbage(system, "jobs.status", "default/twice")
    publish_garbage(system, "nodes", "node-0")

    status, out, err = run_cli(system, monkeypatch, "get", "jobs", "twice", "-v")
    assert status == 0
    assert out.splitlines()[1].split()[:3] == ["default", "twice", "Running"]
    assert err == f"skipped {len(GARBAGE)} record(s) on jobs.status that no contract decodes\n"
    status, out, _ = run_cli(system, monkeypatch, "get", "nodes")
    assert [line.split()[0] for line in out.splitlines()] == ["NAME", "node-0", "node-1"]
    status, out, _ = run_cli(system, monkeypatch, "describe", "job", "twice")
    assert (status, "Phase:            Running" in out) == (0, True)


def test_a_rejection_naming_terminal_escapes_is_printed_escaped(system, monkeypatch, manifest):
    text = job("escapes").replace("queue: default", 'queue: "\\e]0;owned\\a\\e[2Jq"')
    status, out, err = run_cli(system, monkeypatch, "submit", manifest("escapes", text))
    assert (status, out) == (1, "")  # refused before publishing: admission's check, run here
    assert "\x1b" not in err
    assert "\x07" not in err
    assert '"\\u001b]0;owned\\u0007\\u001b[2Jq" not found' in err
    # another client publishes it anyway: the service's rejection is escaped as well
    settings = Settings.from_env(system.env())
    records = [item.record for item in records_for(text, system.prefix, SystemClock().now())]
    asyncio.run(publish(settings, records))

    def rejected() -> bool:
        return "Rejected" in run_cli(system, monkeypatch, "describe", "job", "escapes")[1]

    eventually(rejected, "job escapes described Rejected", system)
    status, out, _ = run_cli(system, monkeypatch, "describe", "job", "escapes")
    assert status == 0
    assert "\x1b" not in out
    assert "\\u001b[2Jq" in out

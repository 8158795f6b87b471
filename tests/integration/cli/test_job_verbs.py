"""vcctl's and kubectl's habits through the CLI entry point against a running system on a
real broker: ``job suspend|resume|list|view``, ``queue delete``, describe's Events, the
inadmissible mark and the place in the queue, ``-A`` and ``-o wide``, and delete in the
job's trace.

Services run as ``vcbus serve`` processes (``tests/support/served.py``); waits are bounded
polls, never timing claims.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.served import ServedSystem, eventually, run_cli, served_system
from vcbus.core.runtime.clock import SystemClock
from vcbus.core.runtime.settings import Settings
from vcbus.services.cli.submit import publish
from vcbus.services.submission import records_for

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def system(kafka_bootstrap: str) -> Iterator[ServedSystem]:
    """Two nodes of 4 CPU and 8Gi under a prefix of this module's own: no other module's
    jobs hold their capacity."""
    prefix = f"t-{os.getpid()}-verbs."
    cluster = ["--nodes", "2", "--node-cpu", "4", "--node-memory", "8Gi"]
    with served_system(kafka_bootstrap, prefix, cluster_args=cluster) as running:
        yield running


def job(name: str, *, queue: str = "default") -> str:
    """A gang of two workers whose pods run until they are deleted."""
    return f"""\
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: {name}
spec:
  queue: {queue}
  tasks:
    - name: worker
      replicas: 2
      template:
        spec:
          containers:
            - name: worker
              image: busybox
              resources:
                requests: {{cpu: "1", memory: 1Gi}}
"""


@pytest.fixture
def manifest(tmp_path: Path):
    def write(name: str, text: str) -> str:
        path = tmp_path / f"{name}.yaml"
        path.write_text(text)
        return str(path)

    return write


def listed(system, monkeypatch, name: str) -> dict[str, object]:
    """The job as ``vcbus job list -o json`` shows it (``{}`` when not listed)."""
    _, text, _ = run_cli(system, monkeypatch, "job", "list", "-o", "json")
    items = [i for i in json.loads(text)["items"] if i["name"] == name] if text else []
    return items[0] if items else {}


def running_pods(system, monkeypatch, job_key: str) -> list[str]:
    _, text, _ = run_cli(system, monkeypatch, "get", "pods", "-o", "json")
    items = json.loads(text)["items"] if text else []
    return sorted(p["name"] for p in items if p["job"] == job_key and p["phase"] == "Running")


def test_suspend_aborts_a_running_job_and_resume_starts_it_again(system, monkeypatch, manifest):
    status, out, _ = run_cli(
        system, monkeypatch, "submit", manifest("pausable", job("pausable")), "--wait"
    )
    assert status == 0, out
    submitted_trace = out.splitlines()[0].split("trace_id=")[1]

    status, out, err = run_cli(system, monkeypatch, "job", "suspend", "pausable")
    assert (status, err) == (0, "")
    assert out == f"job default/pausable suspend requested trace_id={submitted_trace}\n"
    eventually(
        lambda: listed(system, monkeypatch, "pausable").get("phase") == "Aborted",
        "pausable listed Aborted",
        system,
    )
    assert running_pods(system, monkeypatch, "default/pausable") == []

    status, out, _ = run_cli(system, monkeypatch, "job", "resume", "-n", "default", "pausable")
    assert status == 0
    assert out.startswith("job default/pausable resume requested trace_id=")
    eventually(
        lambda: listed(system, monkeypatch, "pausable").get("phase") == "Running",
        "pausable listed Running again",
        system,
    )
    assert listed(system, monkeypatch, "pausable")["retryCount"] == 1
    eventually(
        lambda: (
            running_pods(system, monkeypatch, "default/pausable")
            == ["pausable-worker-0", "pausable-worker-1"]
        ),
        "pausable's pods running again",
        system,
    )

    status, out, _ = run_cli(system, monkeypatch, "job", "view", "pausable")
    assert status == 0
    assert "Phase:            Running" in out
    assert "Retry Count:      1" in out
    events = out[out.index("\nEvents:\n") :].splitlines()[3:]
    reasons = [line.split()[1] for line in events]
    assert reasons[0] == "Admitted", events
    for expected in ("Enqueued", "Bound", "Started", "CommandIssued", "Aborted", "Restarted"):
        assert expected in reasons, "\n".join(events)
    assert reasons.index("Aborted") < reasons.index("Restarted")
    assert "Running" in reasons[reasons.index("Restarted") :], events


def test_job_verbs_refuse_a_job_vcbus_does_not_know(system, monkeypatch):
    for verb in ("suspend", "resume"):
        assert run_cli(system, monkeypatch, "job", verb, "nosuch") == (
            1,
            "",
            f'vcbus job {verb}: job "default/nosuch" not found\n',
        )
    assert run_cli(system, monkeypatch, "job", "view", "nosuch")[0] == 1


def test_queue_delete_is_refused_while_the_queue_holds_a_job(system, monkeypatch, manifest):
    assert run_cli(system, monkeypatch, "queue", "create", "team")[0] == 0
    status, out, _ = run_cli(
        system, monkeypatch, "submit", manifest("member", job("member", queue="team")), "--wait"
    )
    assert status == 0, out
    submitted_trace = out.splitlines()[0].split("trace_id=")[1]

    assert run_cli(system, monkeypatch, "queue", "delete", "team") == (
        1,
        "",
        'vcbus queue delete: queue "team" holds 1 job(s) (default/member): delete them first\n',
    )
    assert run_cli(system, monkeypatch, "queue", "delete", "default") == (
        1,
        "",
        'vcbus queue delete: queue "default" cannot be deleted\n',
    )

    assert run_cli(system, monkeypatch, "delete", "job", "member", "--wait")[0] == 0
    status, out, _ = run_cli(system, monkeypatch, "describe", "job", "member")
    assert "Phase:            Deleted" in out
    assert f"Trace ID:         {submitted_trace}" in out  # the delete continued the job's trace
    assert run_cli(system, monkeypatch, "queue", "delete", "team") == (
        0,
        "queue team deleted\n",
        "",
    )

    def queues() -> list[str]:
        _, text, _ = run_cli(system, monkeypatch, "get", "queues", "-o", "json")
        return [str(q["name"]) for q in json.loads(text)["items"]]

    eventually(lambda: "team" not in queues(), "queue team no longer listed", system)
    assert run_cli(system, monkeypatch, "queue", "delete", "team")[2] == (
        'vcbus queue delete: queue "team" not found\n'
    )


def test_a_job_that_can_never_run_is_inadmissible_and_describe_says_its_place(
    system, monkeypatch, manifest
):
    text = job("giant").replace('cpu: "1"', 'cpu: "6"')  # the nodes offer 4 CPU each
    assert run_cli(system, monkeypatch, "submit", manifest("giant", text))[0] == 0
    described: dict[str, str] = {}

    def marked() -> bool:
        code, out, _ = run_cli(system, monkeypatch, "describe", "job", "giant")
        described["text"] = out
        return code == 0 and "Admission:        Inadmissible (Infeasible)" in out

    eventually(marked, "giant described Inadmissible", system)
    assert "Pending Reason:   Infeasible" in described["text"]
    assert "Queue Position:   1 of 1 waiting in queue default" in described["text"]
    assert listed(system, monkeypatch, "giant")["admission"] == "Inadmissible"


def test_listings_keep_to_the_default_namespace_unless_all_are_asked_for(
    system, monkeypatch, manifest
):
    text = job("elsewhere").replace("  name: elsewhere\n", "  name: elsewhere\n  namespace: team\n")
    assert run_cli(system, monkeypatch, "submit", manifest("elsewhere", text))[0] == 0

    def names(*flags: str) -> list[str]:
        _, out, _ = run_cli(system, monkeypatch, "get", "jobs", *flags, "-o", "json")
        return [f"{i['namespace']}/{i['name']}" for i in json.loads(out)["items"]] if out else []

    eventually(lambda: "team/elsewhere" in names("-A"), "team/elsewhere listed with -A", system)
    assert "team/elsewhere" not in names()
    assert names("-n", "team") == ["team/elsewhere"]
    status, out, _ = run_cli(system, monkeypatch, "job", "list", "--all-namespaces", "-o", "wide")
    assert status == 0
    header, *rows = out.splitlines()
    assert header.split()[-4:] == ["AGE", "QUEUE", "PRIORITY", "NODES"]
    assert any(r.split()[:2] == ["team", "elsewhere"] for r in rows)


def test_delete_all_with_a_field_selector_and_from_a_file_as_kubectl_does(
    system, monkeypatch, manifest
):
    def sweep_job(name: str, run_seconds: str | None) -> str:
        text = job(name).replace(f"  name: {name}\n", f"  name: {name}\n  namespace: sweep\n")
        text = text.replace('cpu: "1", memory: 1Gi', "cpu: 100m, memory: 64Mi")
        if run_seconds is not None:
            text = text.replace(
                "        spec:\n",
                "        metadata:\n"
                f'          annotations: {{vcbus.io/run-seconds: "{run_seconds}"}}\n'
                "        spec:\n",
            )
        return text

    done, busy = (
        manifest("done", sweep_job("done", "0.1")),
        manifest("busy", sweep_job("busy", None)),
    )
    assert run_cli(system, monkeypatch, "submit", done, busy)[0] == 0

    def phases() -> dict[str, str]:
        _, out, _ = run_cli(system, monkeypatch, "get", "jobs", "-n", "sweep", "-o", "json")
        return {i["name"]: i["phase"] for i in json.loads(out)["items"]} if out else {}

    eventually(
        lambda: phases() == {"done": "Completed", "busy": "Running"}, "done and busy", system
    )
    selector = ["--field-selector", "status.phase=Completed"]
    assert run_cli(
        system, monkeypatch, "delete", "job", "--all", "-n", "sweep", *selector, "--wait"
    ) == (0, "job sweep/done delete requested\njob sweep/done deleted\n", "")
    assert phases() == {"busy": "Running"}

    assert run_cli(system, monkeypatch, "delete", "-f", busy, "--wait")[:2] == (
        0,
        "job sweep/busy delete requested\njob sweep/busy deleted\n",
    )
    assert run_cli(system, monkeypatch, "delete", "job", "--all", "-n", "sweep") == (
        0,
        "",
        "No resources found\n",
    )
    assert run_cli(system, monkeypatch, "delete", "job", "x", "--all")[0] == 2
    with pytest.raises(SystemExit) as refused:  # argparse refuses the selector itself
        run_cli(system, monkeypatch, "delete", "job", "--all", "--field-selector", "spec.x=1")
    assert refused.value.code == 2


def test_a_finished_job_goes_away_after_its_ttl_seconds_after_finished(
    system, monkeypatch, manifest
):
    text = job("shortlived").replace(
        "spec:\n  queue: default\n", "spec:\n  queue: default\n  ttlSecondsAfterFinished: 1\n"
    )
    text = text.replace(
        "      template:\n        spec:\n",
        "      template:\n        metadata:\n          annotations: {vcbus.io/run-seconds: '0.2'}\n"
        "        spec:\n",
    )
    assert run_cli(system, monkeypatch, "submit", manifest("shortlived", text))[0] == 0

    def listed_phase() -> str:
        return str(listed(system, monkeypatch, "shortlived").get("phase", ""))

    eventually(lambda: listed_phase() == "Completed", "shortlived Completed", system)
    eventually(lambda: listed_phase() == "", "shortlived deleted by its TTL", system)
    status, described, err = run_cli(system, monkeypatch, "describe", "job", "shortlived")
    assert "Phase:            Deleted" in described.splitlines()
    # gone, as `delete` would say: exit 1, with the last state still shown
    assert (status, err) == (
        1,
        'job "default/shortlived" not found: deleted (its last state is shown)\n',
    )


def test_a_rejected_job_is_deleted_by_name_and_by_delete_all_and_junk_has_its_own_heading(
    system, monkeypatch
):
    """kubectl deletes what it lists: a rejected job too; junk is listed once, apart."""
    settings = Settings.from_env(
        {"KAFKA_BOOTSTRAP_SERVERS": system.bootstrap, "VCBUS_TOPIC_PREFIX": system.prefix}
    )
    refused = [job(name).replace("replicas: 2", "replicas: -1") for name in ("nay-a", "nay-b")]
    now = SystemClock().now()
    records = [item.record for text in refused for item in records_for(text, system.prefix, now)]
    records += [item.record for item in records_for("{oops", system.prefix, now)]
    asyncio.run(publish(settings, records))
    for name in ("nay-a", "nay-b"):

        def rejected(name: str = name) -> bool:
            return listed(system, monkeypatch, name).get("phase") == "Rejected"

        eventually(rejected, f"{name} rejected", system)

    _, text, _ = run_cli(system, monkeypatch, "get", "jobs")
    jobs, _, junk = text.partition("Rejected records that name no job (in no namespace):\n")
    assert "(unnamed)" not in jobs
    assert "MalformedJson" in junk, text
    _, other, _ = run_cli(system, monkeypatch, "get", "jobs", "-n", "nosuchns")
    assert other == ""

    assert run_cli(system, monkeypatch, "delete", "job", "nay-a") == (
        0,
        "job default/nay-a delete requested\n",
        "",
    )
    eventually(lambda: listed(system, monkeypatch, "nay-a") == {}, "nay-a gone", system)
    status, out, _ = run_cli(
        system, monkeypatch, "delete", "job", "--all", "--field-selector", "status.phase=Rejected"
    )
    assert (status, out) == (0, "job default/nay-b delete requested\n")
    eventually(lambda: listed(system, monkeypatch, "nay-b") == {}, "nay-b gone", system)


def test_junk_is_removed_by_its_origin_then_all_of_it_and_a_later_one_stays(system, monkeypatch):
    """``delete --rejected``: admission's ``RejectionsCleared`` takes junk out of ``get``."""
    settings = Settings.from_env(
        {"KAFKA_BOOTSTRAP_SERVERS": system.bootstrap, "VCBUS_TOPIC_PREFIX": system.prefix}
    )
    heading = "Rejected records that name no job (in no namespace):\n"

    def junk() -> list[str]:
        _, text, _ = run_cli(system, monkeypatch, "get", "jobs", "-o", "json")
        document = json.loads(text) if text else {}
        return [record["origin"] for record in document.get("rejectedRecords", [])]

    def publish_junk(text: str) -> None:
        now = SystemClock().now()
        asyncio.run(publish(settings, [i.record for i in records_for(text, system.prefix, now)]))

    before = set(junk())
    publish_junk("{junk one")
    publish_junk("{junk two")
    eventually(lambda: len(set(junk()) - before) == 2, "two junk records listed", system)
    first, second = sorted(set(junk()) - before)

    status, out, err = run_cli(system, monkeypatch, "delete", "--rejected", "--origin", first)
    assert (status, out, err) == (0, f"rejected record {first} delete requested\n", "")
    eventually(lambda: first not in junk(), "the first junk cleared", system)
    assert second in junk()
    nowhere = f"{system.prefix}jobs.submitted/0:999999"
    assert run_cli(system, monkeypatch, "delete", "--rejected", "--origin", nowhere) == (
        1,
        "",
        f'vcbus delete: rejected record "{nowhere}" not found\n',
    )

    status, out, _ = run_cli(system, monkeypatch, "delete", "--rejected")
    assert status == 0
    assert f"rejected record {second} delete requested\n" in out
    eventually(lambda: junk() == [], "every junk record cleared", system)
    _, text, _ = run_cli(system, monkeypatch, "get", "jobs")
    assert heading not in text
    assert run_cli(system, monkeypatch, "delete", "--rejected") == (0, "", "No resources found\n")

    publish_junk("{junk three")
    eventually(lambda: len(junk()) == 1, "junk after the clear listed", system)

"""Why a job failed or restarted: ``describe job``'s failed pods and policy actions, and
``get pods -o wide|json``'s exit code, reason, restarts and address."""

from __future__ import annotations

import json
from datetime import timedelta

import msgspec
import pytest

from tests.unit.services.cli.builders import (
    NOW,
    SETTINGS,
    build_admitted,
    build_pod,
    build_status,
    pod_created,
    pod_phase,
    publish,
)
from vcbus.contracts import Event, JobAdmitted, JobDeleted, JobKey, PodPhaseChanged, Topic
from vcbus.contracts.objects import Pod
from vcbus.contracts.objects.job import LifecyclePolicy
from vcbus.core.bus.memory import InMemoryBus
from vcbus.core.views.failures import MAX_FAILURES, job_failures
from vcbus.services.cli.describe import describe
from vcbus.services.cli.get import get
from vcbus.services.cli.kinds import KINDS
from vcbus.services.cli.listing import Query

KEY = "default/train"
RESTARTED = "RestartJob on PodFailed of default/train-worker-1 (retry 1 of maxRetry 1)"
GAVE_UP = "retried 1 times, maxRetry 1 reached"


def failed(pod: Pod, code: int, reason: str, node: str, *, at: int = 5) -> PodPhaseChanged:
    return msgspec.structs.replace(
        pod_phase(pod, "Failed", node),
        event_id=f"{pod.uid}-failed",
        occurred_at=NOW + timedelta(seconds=at),
        exit_code=code,
        reason=reason,
        message=f"container main exited {code}",
        host_ip="10.0.0.7",
        restart_count=2,
    )


def admitted_with_policies() -> JobAdmitted:
    admitted = build_admitted(KEY)
    (task,) = admitted.manifest.spec.tasks
    task = msgspec.structs.replace(
        task, policies=(LifecyclePolicy(exit_code=137, action="RestartTask"),)
    )
    spec = msgspec.structs.replace(
        admitted.manifest.spec,
        tasks=(task,),
        max_retry=1,
        policies=(LifecyclePolicy(event="PodFailed", action="RestartJob"),),
    )
    manifest = msgspec.structs.replace(admitted.manifest, spec=spec)
    return msgspec.structs.replace(admitted, manifest=manifest)


def history(pod: Pod, second: Pod) -> list[Event]:
    return [
        admitted_with_policies(),
        pod_created(pod),
        build_status(KEY, "Running", at=1, running=2),
        failed(pod, 3, "Error", "node-b"),
        build_status(KEY, "Restarting", at=6, message=RESTARTED),
        build_status(KEY, "Running", at=8, running=2),
        failed(second, 137, "OOMKilled", "node-c", at=9),
        build_status(KEY, "Failed", at=10, message=GAVE_UP),
    ]


async def test_describe_names_each_failed_pod_its_exit_code_reason_and_the_policy_that_acted():
    bus = InMemoryBus()
    first, second = build_pod(KEY, 1), build_pod(KEY, 0, uid="train-0-u2")
    await publish(bus, *history(first, second))

    text = await describe(bus, SETTINGS, KEY, now=NOW + timedelta(seconds=20))

    assert text is not None
    lines = text.splitlines()
    start = lines.index("Failed Pods:")
    assert lines[start + 1].split() == [
        "POD", "TASK", "INDEX", "NODE", "EXIT", "CODE", "REASON", "AGE", "MESSAGE",
    ]  # fmt: skip
    assert lines[start + 2].split() == [
        "train-worker-1", "worker", "1", "node-b", "3", "Error", "15s",
        "container", "main", "exited", "3",
    ]  # fmt: skip
    assert lines[start + 3].split()[:7] == [
        "train-worker-0", "worker", "0", "node-c", "137", "OOMKilled", "11s",
    ]  # fmt: skip
    (policy,) = [line for line in lines if line.startswith("Policy:")]
    assert policy.split(":", 1)[1].strip() == (
        "PodFailed -> RestartJob (job); exitCode 137 -> RestartTask (task worker); "
        "maxRetry 1, retried 0"
    )
    acted = lines.index("Policy Actions:")
    assert RESTARTED in lines[acted + 2]
    assert lines[acted + 2].split()[:2] == ["Restarting", "14s"]
    assert GAVE_UP in lines[acted + 3]
    assert lines[acted + 3].split()[:2] == ["Failed", "10s"]


async def test_a_job_none_of_whose_pods_failed_has_no_failure_section():
    bus = InMemoryBus()
    pod = build_pod(KEY, 0)
    await publish(bus, build_admitted(KEY), pod_created(pod), build_status(KEY, "Running"))
    text = await describe(bus, SETTINGS, KEY)
    assert text is not None
    assert "Failed Pods:" not in text
    assert "Policy Actions:" not in text


def test_a_job_submitted_again_starts_without_the_failures_of_the_one_deleted():
    first, second = build_pod(KEY, 1), build_pod(KEY, 0, uid="train-0-u2")
    deleted = JobDeleted(event_id="d", occurred_at=NOW + timedelta(seconds=11), job=JobKey(KEY))
    again = msgspec.structs.replace(build_pod(KEY, 1), uid="train-1-u3")
    records = [
        *((Topic.PODS_STATUS if isinstance(e, PodPhaseChanged) else Topic.JOBS_STATUS, e)
          for e in history(first, second)),
        (Topic.JOBS_STATUS, deleted),
        (Topic.PODS_STATUS, failed(again, 1, "Error", "node-a", at=20)),
    ]  # fmt: skip
    failures = job_failures(KEY, records)
    assert [(f.pod, f.exit_code) for f in failures.pods] == [("default/train-worker-1", 1)]
    assert list(failures.actions) == []


def test_the_failed_pods_kept_are_bounded_and_the_older_ones_counted():
    records = [
        (Topic.PODS_STATUS, failed(build_pod(KEY, i, uid=f"u{i}"), 1, "Error", "n", at=i))
        for i in range(MAX_FAILURES + 5)
    ]
    failures = job_failures(KEY, records)
    assert len(failures.pods) == MAX_FAILURES
    assert failures.omitted == 5
    assert failures.pods[-1].index == MAX_FAILURES + 4


@pytest.mark.parametrize("output", ["wide", "json"])
async def test_get_pods_shows_the_address_restarts_exit_code_and_reason(output):
    bus = InMemoryBus()
    pod = build_pod(KEY, 1)
    await publish(bus, pod_created(pod), failed(pod, 3, "Error", "node-b"))
    out: list[str] = []

    await get(bus, SETTINGS, KINDS["pods"], Query((), "default"), output=output, write=out.append)

    text = "".join(out)
    if output == "wide":
        header, row = text.splitlines()
        assert header.split()[-5:] == ["IP", "RESTARTS", "EXIT", "CODE", "REASON"]
        assert row.split() == [
            "default", "train-worker-1", "default/train", "worker", "Failed", "node-b",
            "10.0.0.7", "2", "3", "Error",
        ]  # fmt: skip
    else:
        (obj,) = json.loads(text)["items"]
        assert {k: obj[k] for k in ("node", "hostIP", "restarts", "exitCode", "reason")} == {
            "node": "node-b",
            "hostIP": "10.0.0.7",
            "restarts": 2,
            "exitCode": 3,
            "reason": "Error",
        }
        assert obj["message"] == "container main exited 3"

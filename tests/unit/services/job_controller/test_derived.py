"""What the core derives from a job spec: memoised, and never a cause of another decision."""

from __future__ import annotations

import msgspec
import pytest

from vcbus.contracts._base import Event
from vcbus.contracts.keys import JobKey
from vcbus.contracts.objects.job import Job
from vcbus.contracts.objects.pod import PodPhase
from vcbus.contracts.objects.podgroup import PodGroupPhase
from vcbus.core.step import Ctx
from vcbus.services.job_controller import derived
from vcbus.services.job_controller.core import ControllerConf, ControllerInput, decide
from vcbus.services.job_controller.derived import derive_facts, job_facts
from vcbus.services.job_controller.job_status import count_pods
from vcbus.services.job_controller.podgroup import has_spec, podgroup_spec
from vcbus.services.job_controller.state import JobRecord, PodState

from .builders import T0, Driver, admitted, build_job, build_podgroup, build_task, policy, with_spec

CONF = ControllerConf(priority_classes={"high": 10})


def _lifecycle(driver: Driver) -> None:
    """Admit, enqueue, run every pod, scale up, then finish every pod."""
    driver.start()
    driver.pods(driver.pod_names(), PodPhase.PENDING)
    driver.pods(driver.pod_names(), PodPhase.RUNNING)
    driver.podgroup(PodGroupPhase.RUNNING)
    driver.pods(driver.pod_names(), PodPhase.RUNNING)  # the dependsOn stage, once open
    grown = with_spec(
        driver.job, tasks=(*driver.job.spec.tasks[:-1], build_task("b", 3, cpu="300m"))
    )
    driver.feed(admitted(grown, "digest-2"))
    driver.pods(driver.pod_names(), PodPhase.RUNNING)
    driver.pods(driver.pod_names(), PodPhase.SUCCEEDED)


def _restored(record: JobRecord | None) -> JobRecord | None:
    """The record as a restarted controller reads it back from the changelog."""
    raw = msgspec.msgpack.encode(record)
    return msgspec.msgpack.decode(raw, type=JobRecord | None)


def _with_uid(job: Job, uid: str) -> Job:
    """The job with a uid from admission (ids then do not depend on input event ids)."""
    return msgspec.structs.replace(job, metadata=msgspec.structs.replace(job.metadata, uid=uid))


JOBS = {
    "gang": _with_uid(
        build_job(
            build_task("a", 2, min_available=1, priority_class="high"),
            build_task("b", 2, min_available=2, policies=(policy("RestartJob", "PodFailed"),)),
            min_available=3,
        ),
        "uid-gang",
    ),
    "depends": _with_uid(
        build_job(build_task("a", 2), build_task("b", 1, depends_on=("a",))), "uid-depends"
    ),
}


class TwinDriver(Driver):
    """A driver that also feeds each input to a restarted controller, and compares."""

    checked: int = 0

    def feed(self, event: ControllerInput) -> tuple[Event, ...]:
        ctx = Ctx(now=self.now, trace_id="trace-1")
        cold = ControllerConf(priority_classes=dict(self.conf.priority_classes))
        again = decide(_restored(self.record), event, ctx, cold)
        emits = super().feed(event)
        # Equal values (not bytes: ``omit_defaults`` omits a default by identity, and a
        # decoded "default" string is not the interned one).
        assert again.emit == emits
        assert again.state == self.record
        self.checked += 1
        return emits


@pytest.mark.parametrize("kind", sorted(JOBS))
def test_decisions_are_the_same_when_the_record_is_restored_and_the_memo_is_cold(
    kind: str,
) -> None:
    driver = TwinDriver(JOBS[kind], conf=CONF)
    _lifecycle(driver)
    assert driver.checked > 10
    assert driver.phase() == "Completed"


def test_decisions_are_the_same_when_the_memo_keeps_a_single_job(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def run() -> list[bytes]:
        drivers = [Driver(job, conf=CONF) for job in JOBS.values()]
        for driver in drivers:
            driver.start()
        for driver in drivers:  # interleaved, so each input finds the other job memoised
            driver.pods(driver.pod_names(), PodPhase.RUNNING)
        for driver in drivers:
            _lifecycle(driver)
        return [msgspec.json.encode(driver.emitted) for driver in drivers]

    roomy = run()
    monkeypatch.setattr(derived, "MEMO_LIMIT", 1)
    assert run() == roomy


def test_facts_are_remembered_per_job_and_follow_an_accepted_update() -> None:
    job = JOBS["gang"]
    facts = job_facts(job, CONF)
    assert job_facts(job, CONF) is facts
    assert facts == derive_facts(job, CONF)
    grown = with_spec(job, tasks=(*job.spec.tasks, build_task("c", 4)))
    assert job_facts(grown, CONF).total_replicas == facts.total_replicas + 4
    assert job_facts(job, ControllerConf()).templates[0].priority != facts.templates[0].priority


def test_podgroup_has_the_spec_it_was_built_from_and_no_other() -> None:
    job = JOBS["depends"]
    podgroup = build_podgroup(JobKey("default/job"), job, "u1", {}, created_at=T0)
    assert has_spec(podgroup, podgroup_spec(job, {}))
    grown = with_spec(job, min_available=5)
    assert not has_spec(podgroup, podgroup_spec(grown, {}))
    rebuilt = build_podgroup(JobKey("default/job"), grown, "u1", {}, created_at=T0)
    assert has_spec(rebuilt, podgroup_spec(grown, {}))


def test_pods_of_tasks_gone_from_the_spec_are_counted_after_it_in_name_order() -> None:
    job = build_job(build_task("b", 1), build_task("a", 1))
    pods = (
        PodState(name="p1", task="b", index=0, uid="1", version=0, phase=PodPhase.RUNNING),
        PodState(name="p2", task="z", index=0, uid="2", version=0, phase=PodPhase.UNKNOWN),
        PodState(name="p3", task="y", index=0, uid="3", version=0, phase=PodPhase.FAILED),
        PodState(name="p4", task="b", index=1, uid="4", version=0, phase=PodPhase.SUCCEEDED),
        PodState(name="p5", task="z", index=1, uid="5", version=0),
    )
    record = JobRecord(
        job_key=JobKey("default/job"), job=job, spec_digest="d", uid="u", created_at=T0, pods=pods
    )
    counts = count_pods(record, terminating=2)
    assert list(counts.tasks) == ["b", "y", "z"]
    assert (counts.pending, counts.running, counts.succeeded, counts.failed) == (1, 1, 1, 1)
    assert (counts.unknown, counts.terminating) == (1, 2)
    assert counts.tasks["z"].unknown == 1
    assert counts.tasks["z"].pending == 1
    assert counts.tasks["b"].succeeded == 1

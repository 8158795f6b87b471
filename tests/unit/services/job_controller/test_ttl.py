"""``ttlSecondsAfterFinished``: a finished job is deleted that long after it finished.

As volcano@HEAD ``pkg/controllers/garbagecollector/garbagecollector.go`` does: Completed,
Failed and Terminated jobs count from their finish; a job without a TTL stays.
"""

from __future__ import annotations

from datetime import timedelta

import msgspec
import pytest

from tests.unit.services.job_controller.builders import Driver, build_job, build_task, kinds
from vcbus.contracts.objects.job import JobPhase
from vcbus.contracts.objects.pod import PodPhase
from vcbus.contracts.objects.podgroup import PodGroupPhase
from vcbus.core.step import Tick
from vcbus.services.job_controller.core import next_deadline

PODS = ["done-worker-0", "done-worker-1"]


def finished(ttl: int | None, phase: PodPhase = PodPhase.SUCCEEDED) -> Driver:
    job = build_job(build_task("worker", 2), name="done")
    job = msgspec.structs.replace(
        job, spec=msgspec.structs.replace(job.spec, ttl_seconds_after_finished=ttl)
    )
    driver = Driver(job)
    driver.admit()
    driver.podgroup(PodGroupPhase.INQUEUE)
    driver.pods(PODS, PodPhase.RUNNING)
    driver.now += timedelta(seconds=30)
    driver.pods(PODS, phase, exit_code=0 if phase is PodPhase.SUCCEEDED else 1)
    return driver


@pytest.mark.parametrize(
    ("phase", "final"),
    [(PodPhase.SUCCEEDED, JobPhase.COMPLETED), (PodPhase.FAILED, JobPhase.FAILED)],
)
def test_a_finished_job_is_deleted_once_its_ttl_has_passed_and_not_before(
    phase: PodPhase, final: JobPhase
) -> None:
    driver = finished(100, phase)
    assert driver.current.phase is final
    finished_at = driver.now
    assert next_deadline(driver.current) == finished_at + timedelta(seconds=100)

    driver.now = finished_at + timedelta(seconds=99)
    assert driver.feed(Tick(now=driver.now)) == ()
    driver.now = finished_at + timedelta(seconds=100)
    emitted = driver.feed(Tick(now=driver.now))

    assert kinds(emitted) == ["PodDeleted", "PodDeleted", "JobDeleted"]
    assert driver.record is None


def test_a_ttl_of_zero_is_due_as_the_job_finishes_and_none_never_is() -> None:
    at_once = finished(0)
    assert next_deadline(at_once.current) == at_once.now
    assert kinds(at_once.feed(Tick(now=at_once.now)))[-1] == "JobDeleted"

    kept = finished(None)
    assert kept.current.phase is JobPhase.COMPLETED
    assert next_deadline(kept.current) is None
    assert kept.feed(Tick(now=kept.now + timedelta(days=365))) == ()
    assert kept.record is not None


def test_a_running_job_has_no_ttl_deadline() -> None:
    job = build_job(build_task("worker", 2), name="done")
    job = msgspec.structs.replace(
        job, spec=msgspec.structs.replace(job.spec, ttl_seconds_after_finished=5)
    )
    driver = Driver(job)
    driver.admit()
    driver.podgroup(PodGroupPhase.INQUEUE)
    driver.pods(PODS, PodPhase.RUNNING)

    assert driver.current.finished_at is None
    assert next_deadline(driver.current) is None

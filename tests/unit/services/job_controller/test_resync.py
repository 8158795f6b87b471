"""The job-controller's resync: ``SyncJob`` from the record alone, publishing only what is due."""

from __future__ import annotations

import msgspec

from tests.unit.services.job_controller.builders import (
    Driver,
    build_job,
    build_task,
    pods_of,
    statuses,
)
from vcbus.contracts.objects.job import JobPhase
from vcbus.contracts.objects.pod import PodPhase
from vcbus.contracts.objects.podgroup import PodGroupPhase
from vcbus.core.step import Tick


def failing_gang() -> Driver:
    driver = Driver(build_job(build_task("worker", 2), name="failing"))
    driver.admit()
    driver.podgroup(PodGroupPhase.INQUEUE)
    return driver


def test_a_consistent_record_is_left_as_it_was_and_nothing_is_published() -> None:
    driver = failing_gang()
    driver.pods(["failing-worker-0", "failing-worker-1"], PodPhase.RUNNING)
    before = driver.current

    assert driver.feed(Tick(now=driver.now, resync=True)) == ()
    assert driver.current is before


def test_pods_whose_failures_did_not_move_the_job_make_it_fail_at_the_resync() -> None:
    """The record knows every pod failed; the step that should have followed was lost."""
    driver = failing_gang()
    driver.pods(["failing-worker-0", "failing-worker-1"], PodPhase.RUNNING)
    failed = tuple(
        msgspec.structs.replace(pod, phase=PodPhase.FAILED, exit_code=1)
        for pod in driver.current.pods
    )
    driver.record = msgspec.structs.replace(driver.current, pods=failed)

    emitted = driver.feed(Tick(now=driver.now, resync=True))

    assert [s.phase for s in statuses(emitted)][-1] is JobPhase.FAILED
    assert driver.current.phase is JobPhase.FAILED
    assert driver.feed(Tick(now=driver.now, resync=True)) == ()


def test_pods_missing_under_an_inqueue_podgroup_are_created_at_the_resync() -> None:
    driver = failing_gang()
    created = pods_of(driver.emitted)
    driver.record = msgspec.structs.replace(driver.current, pods=())

    emitted = driver.feed(Tick(now=driver.now, resync=True))

    assert pods_of(emitted) == created

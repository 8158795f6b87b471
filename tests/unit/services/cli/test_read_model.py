"""The read model as the commands print it: the contradictions it fixes, one reason for all."""

from __future__ import annotations

import msgspec

from tests.unit.services.cli.builders import (
    NOW,
    PREFIX,
    build_admitted,
    build_phase,
    build_podgroup,
    build_status,
    store_of,
)
from vcbus.contracts import JobKey, PodGroupDeleted, Topic
from vcbus.contracts.objects import PodGroupPhase
from vcbus.services.cli.describe import describe_job
from vcbus.services.cli.kinds import KINDS, job_object
from vcbus.services.cli.listing import Query
from vcbus.services.cli.status_store import StatusStore
from vcbus.services.cli.submit import outcome


def podgroup_deleted(key: str) -> PodGroupDeleted:
    return PodGroupDeleted(
        event_id=f"{key}-pg-deleted",
        occurred_at=NOW,
        job=JobKey(key),
        name=f"{key.split('/')[1]}-pg",
    )


def test_get_jobs_does_not_show_podgroup_running_for_a_completed_job_whose_podgroup_is_gone():
    store = store_of(
        build_admitted("default/a"),
        build_podgroup("default/a"),
        build_phase("default/a", PodGroupPhase.RUNNING),
        build_status("default/a", "Completed", reason="Completed"),
        podgroup_deleted("default/a"),
    )
    assert Topic.PODGROUPS in KINDS["jobs"].topics
    obj = job_object(store, "default/a")
    assert obj is not None
    assert (obj["phase"], obj["podGroupPhase"]) == ("Completed", "Deleted")
    row = KINDS["jobs"].rows(store, Query())["default/a"]
    assert row.cells[2:4] == ("Completed", "Deleted")
    text = describe_job(store, "default/a", jaeger_url="http://j")
    assert text is not None
    assert "Running" not in text


def test_a_restarted_jobs_new_podgroup_does_not_take_the_old_ones_phase():
    renamed = build_podgroup("default/a")
    renamed = msgspec.structs.replace(
        renamed, podgroup=msgspec.structs.replace(renamed.podgroup, name="a-pg-2")
    )
    store = store_of(
        build_podgroup("default/a"),
        build_phase("default/a", PodGroupPhase.RUNNING),
        renamed,
        build_status("default/a", "Pending"),
    )
    obj = job_object(store, "default/a")
    assert obj is not None
    assert obj["podGroupPhase"] == "Pending"


def test_submit_wait_never_says_an_inqueue_podgroup_is_not_enqueued_yet():
    ours = store_of(
        build_status(
            "default/a",
            "Pending",
            reason="PodGroupPending",
            message="PodGroup a-pg is not enqueued yet",
        ),
        build_phase("default/a", PodGroupPhase.INQUEUE),
    )
    result = outcome(ours, StatusStore(PREFIX), "default/a", unchanged=False)
    assert result.line.startswith("default/a: Pending, PodGroup Inqueue, ")
    assert "not enqueued" not in result.line
    assert "PodsPending: PodGroup is Inqueue" in result.line
    obj = job_object(ours, "default/a")
    assert obj is not None
    assert obj["reason"] == "PodsPending"


def test_pod_counts_never_read_as_more_started_than_the_minimum_allows():
    status = build_status("default/a", "Running", running=2)
    six = msgspec.structs.replace(status, running=6, pending=0, min_available=3)
    ours = store_of(six, build_phase("default/a", PodGroupPhase.RUNNING))
    line = outcome(ours, StatusStore(PREFIX), "default/a", unchanged=False).line
    assert "6/3" not in line
    assert line == "default/a: Running, PodGroup Running, 6 running (min available 3)"


def test_every_command_says_the_same_reason_for_a_waiting_job():
    store = store_of(
        build_status("default/a", "Pending", reason="PodGroupPending"),
        build_phase("default/a", PodGroupPhase.PENDING, reason="ClusterOverused", message="cpu"),
    )
    obj = job_object(store, "default/a")
    assert obj is not None
    assert (obj["reason"], obj["message"]) == ("ClusterOverused", "cpu")
    line = outcome(store, StatusStore(PREFIX), "default/a", unchanged=False).line
    assert line.endswith(", ClusterOverused: cpu")
    text = describe_job(store, "default/a", jaeger_url="http://j")
    assert text is not None
    assert "Pending Reason:   ClusterOverused" in text

"""``vcbus submit --wait``, ``delete`` and ``queue``: outcomes, progress and records."""

from __future__ import annotations

import argparse
import io
from datetime import UTC, datetime

import msgspec
import pytest

from tests.unit.services.cli.builders import (
    PREFIX,
    build_admitted,
    build_phase,
    build_rejected,
    build_status,
    store_of,
)
from vcbus.contracts import JobDeleteRequested, Topic
from vcbus.contracts.objects import PodGroupPhase
from vcbus.core.bus.records import Record
from vcbus.core.reasons import NEVER_ADMITTED
from vcbus.services.cli.delete import Requirement, delete_record, field_selector
from vcbus.services.cli.queue import resources
from vcbus.services.cli.status_store import StatusStore, trace_id_of
from vcbus.services.cli.submit import Progress, outcome


def test_outcome_is_done_when_the_job_runs():
    ours = store_of(
        build_status("default/a", "Running", running=2),
        build_phase("default/a", PodGroupPhase.RUNNING),
    )
    result = outcome(ours, StatusStore(PREFIX), "default/a", unchanged=False)
    assert (result.done, result.failed) == (True, False)
    assert result.line == "default/a: Running, PodGroup Running, 2 running (min available 2)"


def test_outcome_names_the_reason_and_waits_on_while_the_reason_can_pass():
    ours = store_of(
        build_status("default/a", "Pending"),
        build_phase(
            "default/a", PodGroupPhase.PENDING, reason="ClusterOverused", message="no room"
        ),
    )
    result = outcome(ours, StatusStore(PREFIX), "default/a", unchanged=False)
    assert not result.done
    assert result.line.endswith("ClusterOverused: no room")


@pytest.mark.parametrize("reason", ["QueueClosed", "QueueNotFound", "Infeasible"])
def test_outcome_stops_failed_when_the_job_waits_for_what_cannot_pass_by_itself(reason):
    ours = store_of(
        build_status("default/a", "Pending"),
        build_phase("default/a", PodGroupPhase.PENDING, reason=reason, message="why"),
    )
    result = outcome(ours, StatusStore(PREFIX), "default/a", unchanged=False)
    assert (result.done, result.failed) == (True, True)
    assert result.line.endswith(f"{reason}: why (it cannot start until that changes)")


def test_outcome_stops_failed_for_a_minimum_alone_over_its_queues_capability():
    """It can never be admitted as it is; one that waits beside running jobs waits on."""
    never = f"minResources cpu 9 exceed queue q's capability (cpu 8): {NEVER_ADMITTED}"
    beside = "queue q would exceed its capability: minResources cpu 4 do not fit beside"
    for message, stops in ((never, True), (beside, False)):
        ours = store_of(
            build_status("default/a", "Pending"),
            build_phase(
                "default/a", PodGroupPhase.PENDING, reason="QueueOverCapability", message=message
            ),
        )
        result = outcome(ours, StatusStore(PREFIX), "default/a", unchanged=False)
        assert (result.done, result.failed) == (stops, stops), message


def test_outcome_fails_when_the_job_was_rejected():
    result = outcome(
        store_of(build_rejected("default/a")), StatusStore(PREFIX), "default/a", unchanged=False
    )
    assert (result.done, result.failed) == (True, True)
    assert "spec.tasks[0].replicas: replicas must be >= 0" in result.line


def test_outcome_takes_the_current_status_when_an_unchanged_resubmission_made_none():
    ours = store_of(build_admitted("default/a"))
    current = store_of(build_status("default/a", "Running", running=2))
    assert outcome(ours, current, "default/a", unchanged=False).line == "default/a: Admitted"
    assert outcome(ours, current, "default/a", unchanged=True).done


def test_progress_appends_a_line_per_change_when_not_on_a_terminal():
    out = io.StringIO()
    progress = Progress(out, interactive=False)
    progress.show({"a": "a: Pending", "b": "b: Pending"})
    progress.show({"a": "a: Running", "b": "b: Pending"})
    assert out.getvalue().splitlines() == ["a: Pending", "b: Pending", "a: Running"]


def test_progress_rewrites_its_lines_in_place_when_on_a_terminal():
    out = io.StringIO()
    progress = Progress(out, interactive=True)
    progress.show({"a": "a: Pending"})
    progress.show({"a": "a: Running"})
    assert out.getvalue() == "\x1b[2Ka: Pending\n\x1b[1F\x1b[2Ka: Running\n"


def test_delete_command_is_keyed_by_the_job_in_a_new_trace_when_made():
    record, trace_id = delete_record("team/a", PREFIX, datetime(2026, 1, 1, tzinfo=UTC))
    assert record.topic == f"{PREFIX}{Topic.JOBS_SUBMITTED}"
    assert record.key == b"team/a"
    assert msgspec.json.decode(record.value or b"", type=JobDeleteRequested).job == "team/a"
    assert (
        trace_id_of(Record(record.topic, 0, 0, record.key, record.value, record.headers))
        == trace_id
    )
    assert len(trace_id) == 32


def test_resources_are_parsed_in_base_units_when_written_like_kubernetes():
    assert resources("cpu=4, memory=1Gi") == {"cpu": 4000, "memory": 1 << 30}
    with pytest.raises(argparse.ArgumentTypeError, match="cpu=4,memory=8Gi"):
        resources("cpu")


def test_field_selectors_are_read_as_kubectls_and_unknown_fields_refused():
    assert field_selector("status.phase=Completed, metadata.name!=keep") == (
        Requirement("status.phase", "Completed"),
        Requirement("metadata.name", "keep", equal=False),
    )
    assert field_selector("status.phase==Failed") == (Requirement("status.phase", "Failed"),)
    for bad in ("status.phase", "spec.queue=x"):
        with pytest.raises(argparse.ArgumentTypeError):
            field_selector(bad)
    fields = {"status.phase": "Completed", "metadata.name": "keep"}
    assert [
        r.holds(fields) for r in field_selector("status.phase=Completed,metadata.name!=keep")
    ] == [
        True,
        False,
    ]

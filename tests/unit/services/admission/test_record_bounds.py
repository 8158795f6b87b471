"""Every answer of admission fits in a record (docs/design.md#bounded-records): capped rejections,
refused giants."""

from __future__ import annotations

from datetime import UTC, datetime

import msgspec
import pytest

from tests.unit.services.admission.builders import build_job, build_task, manifest
from vcbus.contracts.events.jobs_admitted import JobAdmitted
from vcbus.contracts.events.jobs_rejected import JobRejected, SubmissionOrigin
from vcbus.contracts.limits import (
    MAX_EVENT_BYTES,
    MAX_PAYLOAD_ECHO_BYTES,
    MAX_VIOLATION_TEXT_BYTES,
    MAX_VIOLATIONS,
)
from vcbus.core.bus.codec import encode
from vcbus.core.step import Ctx
from vcbus.services.admission.core import AdmissionLimits, Submission, decide

CTX = Ctx(now=datetime(2026, 3, 1, tzinfo=UTC))
ORIGIN = SubmissionOrigin(topic="vcbus.jobs.submitted", partition=0, offset=7)


def answer(payload: bytes) -> JobAdmitted | JobRejected:
    (event,) = decide({}, Submission(payload, ORIGIN), CTX, AdmissionLimits())
    assert isinstance(event, JobAdmitted | JobRejected)
    assert len(encode(event)) <= MAX_EVENT_BYTES
    return event


def rejected(payload: bytes) -> JobRejected:
    event = answer(payload)
    assert isinstance(event, JobRejected), event
    return event


def test_rejection_lists_a_hundred_violations_and_counts_the_rest() -> None:
    """One dependency named 200,000 times: 199,999 duplicates, one record."""
    tasks = [build_task("a"), build_task("b", depends_on=["a"] * 200_000)]
    event = rejected(manifest(build_job(*tasks)))

    assert len(event.violations) == MAX_VIOLATIONS
    assert event.violations_omitted > 199_000 - MAX_VIOLATIONS
    assert event.payload_truncated is True


@pytest.mark.parametrize("name", ["n" * 300_000, "\x01" * 100_000], ids=["ascii", "control"])
def test_rejection_cuts_long_paths_and_messages_to_a_kib_of_json(name: str) -> None:
    """A name quoted in a message: control characters take six bytes each in JSON."""
    event = rejected(manifest(build_job(build_task("t"), name=name)))

    assert event.violations
    for violation in event.violations:
        assert len(msgspec.json.encode(violation.message)) - 2 <= MAX_VIOLATION_TEXT_BYTES
        assert len(msgspec.json.encode(violation.path)) - 2 <= MAX_VIOLATION_TEXT_BYTES
    assert any(v.message.endswith("…") for v in event.violations)


@pytest.mark.parametrize(
    "payload",
    [b"\xff" * 200_000, b"\x01" * 200_000, "é".encode() * 100_000],
    ids=["invalid-utf8", "control-characters", "two-byte-characters"],
)
def test_payload_echo_is_at_most_64_kib_of_json_text(payload: bytes) -> None:
    event = rejected(payload)

    assert len(msgspec.json.encode(event.payload)) - 2 <= MAX_PAYLOAD_ECHO_BYTES
    assert event.payload
    assert event.payload_truncated is True


def test_job_whose_admission_record_would_not_fit_is_rejected_naming_the_limit() -> None:
    """10,000 valid tasks of one replica in 0.8 MiB: a JobAdmitted over 1 MiB once mutated."""
    container = {"name": "c", "image": "i"}
    tasks = [
        {"name": f"t{index}", "replicas": 1, "template": {"spec": {"containers": [container]}}}
        for index in range(10_000)
    ]
    payload = manifest(build_job(*tasks, name="wide"))
    assert len(payload) < 1024 * 1024
    event = rejected(payload)

    reasons = {v.reason: v.message for v in event.violations}
    assert "JobTooLarge" in reasons
    assert "1048576 bytes" in reasons["JobTooLarge"]


def test_job_whose_controller_state_would_not_fit_is_rejected_naming_the_limit() -> None:
    """5,000 tasks: the record of the job itself (its tasks' counts) would not fit."""
    tasks = [build_task(f"t{index}", 1) for index in range(5_000)]
    event = rejected(manifest(build_job(*tasks, name="x")))

    reasons = {v.reason: v.message for v in event.violations}
    assert "JobStateTooLarge" in reasons
    assert "5000 pods" in reasons["JobStateTooLarge"]
    assert "1048576 bytes" in reasons["JobStateTooLarge"]


def test_job_of_ten_thousand_pods_is_admitted_its_state_split_in_records() -> None:
    """The job-controller keeps 10,000 pods in parts of 512: no record is over 1 MiB."""
    event = answer(manifest(build_job(build_task("worker", 10_000), name="x")))

    assert isinstance(event, JobAdmitted)


def test_job_of_a_thousand_pods_is_admitted_when_its_records_fit() -> None:
    event = answer(manifest(build_job(build_task("worker", 1000), name="big")))

    assert isinstance(event, JobAdmitted)


def test_job_whose_pods_together_would_pass_128_mib_is_rejected_naming_the_limit() -> None:
    """1,000 pods of 144 KB of labels each: 144 MB written in one step."""
    task = build_task("w", 1000)
    task["template"]["metadata"]["labels"] = {f"k{n}": "v" * 63 for n in range(2000)}
    event = rejected(manifest(build_job(task, name="labelled")))

    assert [v.reason for v in event.violations] == ["PodsTooLarge"], event.violations
    assert f"{128 << 20} bytes (128 MiB) per job" in event.violations[0].message

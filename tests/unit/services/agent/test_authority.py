"""The agent's launch gate: the admitted manifests it may run, and the check of a binding."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import msgspec
import pytest

from tests.unit.core.test_authority import (
    ADMISSION,
    ALLOCATOR,
    TRUST,
    admitted,
    binding,
    job_texts,
)
from vcbus.core.authority import (
    REASON_SPEC_NOT_ADMITTED,
    REASON_UNSIGNED,
    LaunchRefusedError,
    sign_admitted,
    sign_binding,
)
from vcbus.services.agent.authority import VERSIONS_KEPT, LaunchGate

NOW = datetime(2026, 3, 1, tzinfo=UTC)


def test_a_gate_without_trust_runs_the_newest_manifest_and_checks_nothing_when_asked() -> None:
    gate = LaunchGate(None)
    event = admitted(job_texts()[0])
    gate.admit(event)
    gate.check_binding(binding())
    gate.check_spec(binding())
    assert gate.manifest(event.job, "", {event.job: event.manifest}) is event.manifest


def test_an_unsigned_admitted_job_is_not_kept_when_admitted() -> None:
    """Attack: a bus writer overwrites an admitted job's spec with one of its own."""
    gate = LaunchGate(TRUST)
    event = admitted(job_texts()[0])
    with pytest.raises(LaunchRefusedError) as caught:
        gate.admit(event)
    assert caught.value.reason == REASON_UNSIGNED
    assert gate.manifest(event.job, event.manifest_digest, {event.job: event.manifest}) is None


def test_a_binding_names_the_admitted_manifest_it_starts_from_when_a_job_was_updated() -> None:
    gate = LaunchGate(TRUST)
    first = sign_admitted(ADMISSION, admitted(job_texts()[0], offset=1, now=NOW))
    second = sign_admitted(
        ADMISSION, admitted(job_texts()[0], offset=2, now=NOW + timedelta(seconds=1))
    )
    assert first.manifest_digest != second.manifest_digest  # another creation time
    gate.admit(first)
    gate.admit(second)
    newest = {second.job: second.manifest}
    pod = msgspec.structs.replace(
        binding().pod, job=first.job, admitted_digest=first.manifest_digest
    )
    bound = sign_binding(ALLOCATOR, msgspec.structs.replace(binding(), pod=pod))
    gate.check_binding(bound)
    gate.check_spec(bound)
    assert gate.manifest(first.job, first.manifest_digest, newest) == first.manifest


def test_a_signed_binding_naming_a_spec_admission_did_not_sign_is_refused_when_checked() -> None:
    """Attack: a forged pod on the pods topic, bound (and signed) by the allocator."""
    gate = LaunchGate(TRUST)
    event = sign_admitted(ADMISSION, admitted(job_texts()[0]))
    gate.admit(event)
    pod = msgspec.structs.replace(binding().pod, job=event.job, admitted_digest="f" * 64)
    bound = sign_binding(ALLOCATOR, msgspec.structs.replace(binding(), pod=pod))
    gate.check_binding(bound)
    with pytest.raises(LaunchRefusedError) as caught:
        gate.check_spec(bound)
    assert caught.value.reason == REASON_SPEC_NOT_ADMITTED
    assert "ffffffffffffffff" in str(caught.value)
    assert event.manifest_digest[:16] in str(caught.value)


def test_a_gate_keeps_a_bounded_number_of_versions_of_a_job_when_admitted_often() -> None:
    gate = LaunchGate(TRUST)
    events = [
        sign_admitted(ADMISSION, admitted(job_texts()[0], offset=n, now=NOW + timedelta(seconds=n)))
        for n in range(VERSIONS_KEPT + 2)
    ]
    for event in events:
        gate.admit(event)
    kept = [gate.knows(event.job, event.manifest_digest) for event in events]
    assert kept == [False, False] + [True] * VERSIONS_KEPT

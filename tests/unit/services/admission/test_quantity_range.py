"""Quantities beyond what Kubernetes allows are refused at admission, not crash a service later.

Admitted once, ``cpu: "1e6177"`` became a 6,000-digit integer that the job-controller could
not write to its changelog (the service stopped, at every restart), and ``cpu:
"1e99999999"`` raised ``decimal.Overflow`` in admission itself, so the submission got no
answer at all.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from vcbus.contracts import JobRejected, SubmissionOrigin
from vcbus.contracts.quantity import MAX_BASE_UNITS, QuantityError, to_base_units
from vcbus.core.step import Ctx
from vcbus.services.admission.core import AdmissionLimits, Submission, decide

CTX = Ctx(now=datetime(2026, 1, 1, tzinfo=UTC))
ORIGIN = SubmissionOrigin(topic="jobs.submitted", partition=0, offset=0)


def job_requesting(requests: dict[str, object]) -> bytes:
    container = {"name": "c", "image": "busybox", "resources": {"requests": requests}}
    return json.dumps(
        {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "metadata": {"name": "huge"},
            "spec": {
                "tasks": [
                    {"name": "w", "replicas": 1, "template": {"spec": {"containers": [container]}}}
                ]
            },
        }
    ).encode()


@pytest.mark.parametrize(
    "requests",
    [
        {"cpu": "1e6177"},
        {"cpu": "1e99999999"},
        {"cpu": 10**30},
        {"memory": "99999999999999999999999999999999Ei"},
        {"nvidia.com/gpu": "1e20"},
    ],
)
def test_a_job_is_rejected_with_invalid_quantity_when_a_request_is_out_of_range(
    requests: dict[str, object],
) -> None:
    (answer,) = decide(
        {},
        Submission(payload=job_requesting(requests), origin=ORIGIN),
        CTX,
        AdmissionLimits(max_payload_bytes=1 << 20),
    )
    assert isinstance(answer, JobRejected)
    assert [v.reason for v in answer.violations] == ["InvalidQuantity"]
    assert "out of range" in answer.violations[0].message


def test_the_largest_quantity_kubernetes_allows_is_accepted_and_one_more_is_not() -> None:
    assert to_base_units("memory", str(MAX_BASE_UNITS)) == MAX_BASE_UNITS
    with pytest.raises(QuantityError, match="out of range"):
        to_base_units("memory", str(MAX_BASE_UNITS + 1))
    with pytest.raises(QuantityError, match="out of range"):
        to_base_units("cpu", str(MAX_BASE_UNITS))  # milli-cpu: a thousand times more


@pytest.mark.parametrize("written", ["１", "١", "2٠Gi", "1.５"])
def test_a_quantity_with_digits_other_than_ascii_is_refused(written: str) -> None:
    """docs/design.md#names-and-numbers: Kubernetes' ParseQuantity reads 0-9 only; Python's ``\\d``
    reads any digit."""
    (answer,) = decide(
        {},
        Submission(payload=job_requesting({"cpu": written}), origin=ORIGIN),
        CTX,
        AdmissionLimits(),
    )
    assert isinstance(answer, JobRejected)
    assert [v.reason for v in answer.violations] == ["InvalidQuantity"]

"""Admission answers the worst inputs within the memory limit deploy/ ships
(docs/design.md#bounded-records).

A child process limits its own address space (``RLIMIT_AS``) to the admission
container's ``resources.limits.memory`` in ``deploy/k8s/admission.yaml``, then runs the
admission core on every poison case of ``tests/support/poison.py``. Before the fix, the
recursive alias alone grew without bound (a ``MemoryError`` here; an OOM kill and a
restart loop in Kubernetes).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

from tests.support.poison import poison_cases
from vcbus.contracts.limits import MAX_EVENT_BYTES

ROOT = Path(__file__).resolve().parents[4]
UNITS = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30}

CHILD = """
import json, resource, sys
limit = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
from datetime import UTC, datetime
from vcbus.contracts.events.jobs_rejected import SubmissionOrigin
from vcbus.services.admission.core import AdmissionLimits, Submission, decide
from vcbus.core.bus.codec import encode
from vcbus.core.step import Ctx
from tests.support.poison import poison_cases
answers = {}
for case in poison_cases():
    origin = SubmissionOrigin(topic="jobs.submitted", partition=0, offset=0)
    (event,) = decide({}, Submission(case.payload, origin), Ctx(now=datetime.now(UTC)),
                      AdmissionLimits())
    reasons = sorted({v.reason for v in getattr(event, "violations", ())})
    answers[case.label] = {"reasons": reasons, "bytes": len(encode(event))}
print(json.dumps(answers))
"""


def admission_memory_limit() -> int:
    """``resources.limits.memory`` of the admission container, in bytes."""
    documents = yaml.safe_load_all((ROOT / "deploy" / "k8s" / "admission.yaml").read_text())
    for document in documents:
        if document and document.get("kind") == "Deployment":
            (container,) = document["spec"]["template"]["spec"]["containers"]
            text = container["resources"]["limits"]["memory"]
            return int(text[:-2]) * UNITS[text[-2:]]
    raise AssertionError("no admission Deployment in deploy/k8s/admission.yaml")


def test_admission_answers_every_poison_case_within_its_deployed_memory_limit() -> None:
    limit = admission_memory_limit()
    assert limit == 256 << 20  # what deploy/ ships today; the test reads it from there

    child = subprocess.run(
        [sys.executable, "-c", CHILD, str(limit)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=50,
        check=False,
    )

    assert child.returncode == 0, child.stderr[-4000:]
    answers = json.loads(child.stdout)
    for case in poison_cases():
        assert answers[case.label]["reasons"] == sorted(case.reasons), case.label
        assert answers[case.label]["bytes"] <= MAX_EVENT_BYTES, case.label

"""A job of 10,000 pods, through every service on the in-memory bus: admitted, its
PodGroup and pods made, every pod run, the job Completed, nothing dead-lettered.

The job-controller keeps it in 20 parts of 512 pods (docs/design.md#bounded-records: no record over
1 MiB); the split through a real broker is
``tests/integration/services/test_job_controller_parts.py``.
"""

from __future__ import annotations

from typing import Any

import pytest

from vcbus.services.simulation.run import simulate_document

PODS = 10_000
NODES = PODS // 100 + 1

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def test_a_job_of_ten_thousand_pods_is_admitted_runs_and_completes() -> None:
    nodes = [
        {"name": f"n{n}", "allocatable": {"cpu": "64", "memory": "256Gi", "pods": 110}}
        for n in range(NODES)
    ]
    container = {
        "name": "w",
        "image": "busybox",
        "resources": {"requests": {"cpu": "100m", "memory": "100Mi"}},
    }
    job = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "big"},
        "spec": {
            "minAvailable": PODS,
            "tasks": [
                {
                    "name": "w",
                    "replicas": PODS,
                    "template": {
                        "metadata": {"annotations": {"vcbus.io/run-seconds": "10"}},
                        "spec": {"containers": [container]},
                    },
                }
            ],
        },
    }
    out = simulate_document({"nodes": nodes, "jobs": [{"at": 0, "job": job}], "until": "settled"})

    assert (out["rejected"], out["deadLetters"], out["stoppedBy"]) == ({}, [], "settled")
    jobs: Any = out["jobs"]
    result = jobs["default/big"]
    assert (result["phase"], result["podgroup"]) == ("Completed", "Deleted")
    assert result["tasks"]["w"]["succeeded"] == PODS
    pods: Any = out["pods"]
    assert len(pods) == PODS
    assert all(pod["phase"] == "Succeeded" and pod["node"] for pod in pods.values())

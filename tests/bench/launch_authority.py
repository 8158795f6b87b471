"""CPU of launch authority: signing and verifying what a node agent may run.

Run: ``python -m tests.bench.launch_authority [--rounds 2000]`` (not collected by pytest).

Per pod: the allocator signs its binding (:func:`vcbus.core.authority.sign_binding`) and
the agent verifies it (:func:`check_binding`). Per job (and version): admission digests and
signs the admitted manifest (:func:`sign_admitted`) and each agent verifies it
(:func:`check_admitted`, which digests the manifest again). Each figure is the process CPU
time of ``--rounds`` calls divided by the rounds, for the demo's jobs as admitted.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import yaml

from vcbus.contracts import BindingCreated, JobAdmitted
from vcbus.contracts.events.jobs_rejected import SubmissionOrigin
from vcbus.contracts.keys import NodeName
from vcbus.contracts.objects.pod import Pod
from vcbus.core.authority import (
    Role,
    SigningKey,
    Trust,
    check_admitted,
    check_binding,
    generate_key,
    manifest_digest,
    sign_admitted,
    sign_binding,
)
from vcbus.core.step import Ctx
from vcbus.services.admission.core import (
    AdmissionLimits,
    Submission,
    decide,
    queues_from_manifests,
)

DEMO = Path(__file__).resolve().parents[2] / "vcbus" / "services" / "cli" / "demo"
NOW = datetime(2026, 1, 1, tzinfo=UTC)
JOBS = ["real/40-pytorch-rendezvous.yaml", "30-big-gang.yaml", "10-mpi-depends-on.yaml"]


def per_call_us(call: Callable[[], object], rounds: int) -> float:
    """Process CPU per call, in microseconds."""
    call()
    started = time.process_time()
    for _ in range(rounds):
        call()
    return round((time.process_time() - started) / rounds * 1e6, 1)


def admitted(name: str) -> JobAdmitted:
    queues = queues_from_manifests(yaml.safe_load_all((DEMO / "00-queue.yaml").read_text()))
    text = (DEMO / name).read_text()
    submission = Submission(text.encode(), SubmissionOrigin(topic="t", partition=0, offset=0))
    (event,) = decide(queues, submission, Ctx(now=NOW), AdmissionLimits())
    assert isinstance(event, JobAdmitted), event
    return event


def measure(
    event: JobAdmitted, admission: SigningKey, allocator: SigningKey, trust: Trust, rounds: int
) -> dict[str, float]:
    """The CPU of each step for one admitted job and a binding of one of its pods."""
    signed = sign_admitted(admission, event)
    task = event.manifest.spec.tasks[0]
    pod = Pod(
        name=f"{event.manifest.metadata.name}-{task.name}-0",
        namespace=event.manifest.metadata.namespace or "default",
        job=event.job,
        task=task.name,
        index=0,
        podgroup="pg",
        uid="0123abcd-pod-v0-i0",
        requests={"cpu": 1000, "memory": 1 << 30},
        admitted_digest=signed.manifest_digest,
    )
    binding = BindingCreated(event_id="e", occurred_at=NOW, pod=pod, node=NodeName("node-0"))
    bound = sign_binding(allocator, binding)
    return {
        "manifest_digest_us": per_call_us(lambda: manifest_digest(event.manifest), rounds),
        "sign_admitted_us": per_call_us(lambda: sign_admitted(admission, event), rounds),
        "check_admitted_us": per_call_us(lambda: check_admitted(trust, signed), rounds),
        "sign_binding_us": per_call_us(lambda: sign_binding(allocator, binding), rounds),
        "check_binding_us": per_call_us(lambda: check_binding(trust, bound), rounds),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2000)
    args = parser.parse_args()
    admission, allocator = generate_key(Role.ADMISSION), generate_key(Role.ALLOCATOR)
    trust = Trust(
        {
            Role.ADMISSION: {admission.id: admission.private.public_key()},
            Role.ALLOCATOR: {allocator.id: allocator.private.public_key()},
        }
    )
    out = {name: measure(admitted(name), admission, allocator, trust, args.rounds) for name in JOBS}
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()

"""Time the job-controller's pure core (``decide``) through whole job lifecycles.

Run: ``python -m tests.bench.controller_core`` (not collected by pytest).
Admits the pipeline benchmark's jobs (:mod:`tests.bench.workload`: 10-pod gangs, every
fifth with dependsOn) and drives each one as the other services would, stage by stage
over all jobs at once (as in the pipeline, where every job is in flight): JobAdmitted,
PodGroup Inqueue, every pod bound (Pending on a node), Running, PodGroup Running, every
pod Succeeded. A first pass builds the inputs (they carry pod uids the core derives);
each timed pass replays them from empty state, with the jobs decoded afresh (as a
service reads them, so nothing derived from a job object is reused from an earlier
pass). Prints the best time per pod and per input, and a digest of every output (events
and records after each input), which must not change when the core is made faster.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta

import msgspec

from tests.bench.workload import POD_COUNT, build_jobs
from vcbus.contracts.events.jobs_admitted import JobAdmitted
from vcbus.contracts.events.jobs_rejected import SubmissionOrigin
from vcbus.contracts.events.podgroups_status import PodGroupPhaseChanged
from vcbus.contracts.events.pods_status import PodPhaseChanged
from vcbus.contracts.keys import JobKey, NodeName, PodKey
from vcbus.contracts.objects.pod import PodPhase
from vcbus.contracts.objects.podgroup import PodGroupPhase
from vcbus.core.step import Ctx
from vcbus.services.admission.core import AdmissionLimits, Submission
from vcbus.services.admission.core import decide as admit
from vcbus.services.job_controller.core import ControllerConf, ControllerInput, decide
from vcbus.services.job_controller.state import JobRecord

T0 = datetime(2026, 1, 1, tzinfo=UTC)

Input = tuple[JobKey, ControllerInput, Ctx]
Stage = Callable[[JobRecord], list[ControllerInput]]


def admitted_jobs(count: int) -> list[JobAdmitted]:
    """The ``JobAdmitted`` of ``count`` benchmark jobs, as admission writes them."""
    out = []
    for offset, job in enumerate(build_jobs(count, 1.0)):
        origin = SubmissionOrigin(topic="jobs.submitted", partition=0, offset=offset)
        (event,) = admit(
            {}, Submission(job.manifest.encode(), origin), Ctx(now=T0), AdmissionLimits()
        )
        assert isinstance(event, JobAdmitted), event
        out.append(event)
    return out


def _podgroup(phase: PodGroupPhase) -> Stage:
    def inputs(record: JobRecord) -> list[ControllerInput]:
        assert record.podgroup is not None
        return [
            PodGroupPhaseChanged(
                event_id=f"{record.podgroup.uid}-{phase}",
                occurred_at=T0,
                job=record.job_key,
                podgroup=record.podgroup.name,
                phase=phase,
                uid=record.podgroup.uid,
            )
        ]

    return inputs


def _pods(phase: PodPhase, *, before: PodPhase) -> Stage:
    """Every pod of the job in ``before`` moves to ``phase`` (Pending: bound to a node)."""

    def inputs(record: JobRecord) -> list[ControllerInput]:
        namespace = record.job_key.split("/", 1)[0]
        return [
            PodPhaseChanged(
                event_id=f"{pod.uid}-{phase}",
                occurred_at=T0,
                pod=PodKey(f"{namespace}/{pod.name}"),
                job=record.job_key,
                task=pod.task,
                node=NodeName(f"node-{pod.index % 7}"),
                phase=phase,
                exit_code=0 if phase is PodPhase.SUCCEEDED else None,
                reason="Completed" if phase is PodPhase.SUCCEEDED else "",
                pod_uid=pod.uid,
            )
            for pod in record.pods
            if pod.phase is before and (pod.node is None or phase is not PodPhase.PENDING)
        ]

    return inputs


STAGES: Sequence[Stage] = (
    _podgroup(PodGroupPhase.INQUEUE),
    _pods(PodPhase.PENDING, before=PodPhase.PENDING),
    _pods(PodPhase.RUNNING, before=PodPhase.PENDING),
    _podgroup(PodGroupPhase.RUNNING),
    # dependsOn jobs: the master, created once the workers run.
    _pods(PodPhase.PENDING, before=PodPhase.PENDING),
    _pods(PodPhase.RUNNING, before=PodPhase.PENDING),
    _pods(PodPhase.SUCCEEDED, before=PodPhase.RUNNING),
)
"""After admission, what the other services report, in order."""


def build_inputs(jobs: Sequence[JobAdmitted], conf: ControllerConf) -> list[Input]:
    """Drive every job through its lifecycle once; return the inputs in the order fed."""
    records: dict[JobKey, JobRecord | None] = {}
    inputs: list[Input] = []

    def feed(key: JobKey, event: ControllerInput, ctx: Ctx) -> None:
        inputs.append((key, event, ctx))
        records[key] = decide(records.get(key), event, ctx, conf).state

    ctx = Ctx(now=T0, trace_id="0" * 32)
    for job in jobs:
        feed(job.job, job, ctx)
    for number, stage in enumerate(STAGES, start=1):
        ctx = Ctx(now=T0 + timedelta(seconds=number), trace_id=f"{number:032x}")
        for job in jobs:
            record = records[job.job]
            assert record is not None
            for event in stage(record):
                feed(job.job, event, ctx)
    return inputs


def decoded(inputs: Sequence[Input]) -> list[Input]:
    """The inputs with every ``JobAdmitted`` decoded from its encoding (new job objects)."""
    return [
        (key, msgspec.json.decode(msgspec.json.encode(event), type=JobAdmitted), ctx)
        if isinstance(event, JobAdmitted)
        else (key, event, ctx)
        for key, event, ctx in inputs
    ]


def replay(inputs: Sequence[Input], conf: ControllerConf) -> float:
    """Feed the inputs from empty state; return the seconds spent in ``decide``."""
    records: dict[JobKey, JobRecord | None] = {}
    gc.collect()
    start = time.perf_counter()
    for key, event, ctx in inputs:
        records[key] = decide(records.get(key), event, ctx, conf).state
    return time.perf_counter() - start


def outputs(inputs: Sequence[Input], conf: ControllerConf) -> tuple[str, int]:
    """Feed the inputs from empty state; return a digest of all outputs and the events out."""
    records: dict[JobKey, JobRecord | None] = {}
    digest = hashlib.sha256()
    emitted = 0
    for key, event, ctx in inputs:
        step = decide(records.get(key), event, ctx, conf)
        records[key] = step.state
        emitted += len(step.emit)
        digest.update(msgspec.json.encode(step.emit))
        digest.update(msgspec.json.encode(step.state))
    return digest.hexdigest()[:16], emitted


def main(argv: Sequence[str] | None = None) -> None:
    """Run the benchmark."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=1_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    conf = ControllerConf()
    inputs = build_inputs(admitted_jobs(args.jobs), conf)
    pods = args.jobs * POD_COUNT
    best = min(replay(decoded(inputs), conf) for _ in range(args.repeat))
    digest, emitted = outputs(inputs, conf)
    print(
        f"{args.jobs} jobs, {pods} pods, {len(inputs)} inputs, {emitted} events out: "
        f"best {best * 1000:.0f} ms = {best / pods * 1e6:.1f} us/pod, "
        f"{best / len(inputs) * 1e6:.1f} us/input; digest {digest}"
    )


if __name__ == "__main__":
    main()

"""Time a scheduling view's fold of a burst's events, and the records a cycle makes.

Run: ``python -m tests.bench.view_fold`` (not collected by pytest). Folds the events of
``--jobs`` new jobs of 10 pods (a PodGroup, its phase, and per pod its creation, binding,
Pending and Running reports) into a ``ClusterView`` with the trace note a scheduling
service takes of each (``JobTraces.observe``), and makes a record of each of the first
3,000 events as a cycle's outbox does (``event_record``). Prints the best of ``--repeat``
rounds in microseconds per event: the part of a singleton's CPU per pod that is per
event followed or published (docs/performance.md#where-a-new-pods-cpu-goes-in-the-singletons).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence

import msgspec

from tests.unit.contracts.samples import sample
from vcbus.contracts import (
    BindingCreated,
    Event,
    PodCreated,
    PodGroupCreated,
    PodGroupPhaseChanged,
    PodPhaseChanged,
)
from vcbus.contracts.objects.pod import PodPhase
from vcbus.core.bus.outbox import event_record
from vcbus.core.bus.records import Record
from vcbus.core.runtime.traces import JobTraces
from vcbus.core.scheduling import ClusterView

_RECORD = Record("t", 0, 0, b"k", b"", (("traceparent", b"00-1-2-01"),))
_MADE = 3_000


def burst(jobs: int, nodes: int = 5_000) -> list[Event]:
    """The events a scheduling view folds for ``jobs`` new jobs of 10 pods."""
    group, created, bound, phase, group_phase = (
        sample(kind)
        for kind in (
            PodGroupCreated,
            PodCreated,
            BindingCreated,
            PodPhaseChanged,
            PodGroupPhaseChanged,
        )
    )
    assert isinstance(group, PodGroupCreated)
    assert isinstance(created, PodCreated)
    out: list[Event] = []
    for j in range(jobs):
        job = f"default/job-{j}"
        podgroup = msgspec.structs.replace(group.podgroup, job=job, uid=f"pg{j}")
        out.append(msgspec.structs.replace(group, podgroup=podgroup))
        out.append(msgspec.structs.replace(group_phase, job=job, uid=f"pg{j}"))
        for i in range(10):
            name = f"job-{j}-{i}"
            pod = msgspec.structs.replace(
                created.pod, job=job, name=name, namespace="default", uid=f"u{j}-{i}"
            )
            node = f"n{(j * 10 + i) % nodes}"
            out.append(msgspec.structs.replace(created, pod=pod))
            out.append(msgspec.structs.replace(bound, pod=pod, node=node))
            for reported in (PodPhase.PENDING, PodPhase.RUNNING):
                out.append(
                    msgspec.structs.replace(
                        phase,
                        job=job,
                        pod=f"default/{name}",
                        pod_uid=pod.uid,
                        phase=reported,
                        node=node,
                    )
                )
    return out


def measure(jobs: int, repeat: int) -> tuple[float, float]:
    """Best microseconds per event: folded (apply and trace note), made into a record."""
    events = burst(jobs)
    fold = made = float("inf")
    for _ in range(repeat):
        view, traces = ClusterView(), JobTraces()
        started = time.perf_counter()
        for event in events:
            view.apply(event)  # type: ignore[arg-type]
            traces.observe(event, _RECORD)
        fold = min(fold, time.perf_counter() - started)
        started = time.perf_counter()
        for event in events[:_MADE]:
            event_record(event, "")
        made = min(made, time.perf_counter() - started)
    return fold / len(events) * 1e6, made / min(_MADE, len(events)) * 1e6


def main(argv: Sequence[str] | None = None) -> None:
    """Run the benchmark."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=11)
    args = parser.parse_args(argv)
    fold, made = measure(args.jobs, args.repeat)
    print(f"fold {fold:.2f} us per event; record made {made:.2f} us per event")


if __name__ == "__main__":
    main()

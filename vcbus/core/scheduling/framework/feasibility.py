"""Feasibility: whether a job's minimum gang can ever fit the cluster as built.

No Volcano counterpart: Volcano's elect compared nothing, and vcbus's first version compared
minResources with the cluster's total only, so a job whose pods no node could ever hold (a
node selector no node matches, one pod larger than every node) was elected and locked the
cluster forever.

A job is feasible when its minResources fit the cluster's total allocatable and every one of
its minimum pods (created pods, and the minimum pods of a dependent job's stages that have
none yet) passes, on at least one node, the predicates that do not depend on what runs there:
node selector, taints (cordons excepted: a cordon is temporary) and resources counted on the
node's allocatable, as if no other pod ran. Everything is read from the session's node
matrix; the verdict is recomputed every cycle, so it follows nodes as they come and go.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from vcbus.contracts.keys import JobKey
from vcbus.contracts.objects.pod import Toleration
from vcbus.core.scheduling.fit_errors import NODE_SELECTOR_MISMATCH, NODE_UNTOLERATED_TAINT
from vcbus.core.scheduling.model import JobInfo, TaskStatus
from vcbus.core.scheduling.node_matrix import BoolArray, NodeMatrix
from vcbus.core.scheduling.resource import Resource, brief
from vcbus.core.scheduling.taints import tolerates_all

_TOLERANCE = 0.1
"""Volcano's ``LessEqual`` slack (milli-units, bytes)."""

_DONE = frozenset({TaskStatus.SUCCEEDED, TaskStatus.FAILED})

Shape = tuple[tuple[tuple[str, float], ...], tuple[tuple[str, str], ...], tuple[Toleration, ...]]
"""What a pod asks of a node: requests, node selector, tolerations."""


@dataclass(frozen=True, slots=True)
class PodShape:
    """A minimum pod as the feasibility check reads it."""

    name: str
    requests: Mapping[str, float]
    node_selector: Mapping[str, str]
    tolerations: tuple[Toleration, ...]

    @property
    def key(self) -> Shape:
        """The parts that decide where it fits."""
        return (
            tuple(sorted(self.requests.items())),
            tuple(sorted(self.node_selector.items())),
            self.tolerations,
        )


def minimum_pods(job: JobInfo) -> list[PodShape]:
    """The job's minimum pod shapes, then its stages' minimums.

    One per task (role) with a created pod that is not best effort, the first by uid naming
    it: the pods of a task come from one template, so they ask the same of a node.
    """
    out: list[PodShape] = []
    seen: set[str] = set()
    for task in sorted(job.tasks.values(), key=lambda t: t.uid):
        if task.best_effort or task.status in _DONE or task.role in seen:
            continue
        seen.add(task.role)
        out.append(
            PodShape(
                name=task.name,
                requests=task.resreq.as_dict(),
                node_selector=task.pod.node_selector,
                tolerations=task.pod.tolerations,
            )
        )
    present = {task.role for task in job.tasks.values()}
    for stage in job.podgroup.stages:
        if stage.name in present or stage.min_available <= 0:
            continue
        out.append(
            PodShape(
                name=f"{stage.name} (not created yet)",
                requests={k: float(v) for k, v in stage.requests.items()},
                node_selector=stage.node_selector,
                tolerations=stage.tolerations,
            )
        )
    return out


def usable_rows(matrix: NodeMatrix, shape: PodShape) -> tuple[BoolArray, Counter[str]]:
    """The nodes that could ever hold ``shape``, and why the others cannot (per reason)."""
    count = len(matrix)
    ok = np.ones(count, dtype=np.bool_)
    errors: Counter[str] = Counter()
    for key, value in sorted(shape.node_selector.items()):
        mask = matrix.label_mask(key, value)
        errors[NODE_SELECTOR_MISMATCH] += int(np.count_nonzero(ok & ~mask))
        ok &= mask
    taints = np.ones(count, dtype=np.bool_)
    for group_taints, rows in matrix.taint_groups().items():
        if group_taints and not tolerates_all(shape.tolerations, group_taints):
            taints[rows] = False
    errors[NODE_UNTOLERATED_TAINT] += int(np.count_nonzero(ok & ~taints))
    ok &= taints
    for name, amount in sorted(shape.requests.items()):
        if amount <= 0:
            continue
        column = matrix.dimension_index.get(name)
        have = matrix.allocatable[:, column] if column is not None else np.zeros(count)
        fits = (have > amount) | (np.abs(have - amount) < _TOLERANCE)
        errors[f"Insufficient {name}"] += int(np.count_nonzero(ok & ~fits))
        ok &= fits
    return ok, errors


def _render(errors: Counter[str]) -> str:
    return ", ".join(f"{n} {reason}" for reason, n in sorted(errors.items()) if n)


def _total_shortfall(minimum: Resource, total: Resource) -> str | None:
    short = [n for n in minimum.requested_names() if minimum.amount(n) > total.amount(n)]
    if not short:
        return None
    return f"minResources {brief(minimum, short)} exceed the whole cluster's {brief(total, short)}"


@dataclass(frozen=True, slots=True)
class JobFit:
    """What the cluster as built offers one job.

    Attributes:
        why: why it could never run, or ``None`` when it could.
        usable: per node row, whether the node could hold one of its minimum pods.
        largest: the per-dimension largest request among its minimum pods.
    """

    why: str | None
    usable: BoolArray
    largest: Resource


class VerdictMemo(Protocol):
    """Verdicts kept from earlier sessions (``SessionCache``).

    A job's verdict holds while its pods, its PodGroup and the nodes are the same.
    """

    def fit(self, key: JobKey) -> JobFit | None:
        """The job's kept verdict, if it still holds."""
        ...

    def keep_fit(self, key: JobKey, fit: JobFit) -> None:
        """Keep the job's verdict."""
        ...


class Feasibility:
    """The session's feasibility verdicts, each pod shape and each job judged once.

    With a ``memo``, a job judged in an earlier session on the same pods, PodGroup and
    nodes is not judged again.
    """

    def __init__(
        self, matrix: NodeMatrix, total: Resource, memo: VerdictMemo | None = None
    ) -> None:
        self._matrix = matrix
        self._total = total
        self._memo = memo
        self._shapes: dict[Shape, tuple[BoolArray, Counter[str]]] = {}
        self._jobs: dict[JobKey, JobFit] = {}

    def shape(self, shape: PodShape) -> tuple[BoolArray, Counter[str]]:
        """The nodes that could ever hold ``shape``, and why the others cannot."""
        found = self._shapes.get(shape.key)
        if found is None:
            found = self._shapes[shape.key] = usable_rows(self._matrix, shape)
        return found

    def job(self, job: JobInfo) -> JobFit:
        """Judge ``job`` (once per session)."""
        found = self._jobs.get(job.key)
        if found is None:
            memo = self._memo
            found = memo.fit(job.key) if memo is not None else None
            if found is None:
                found = self._judge(job)
                if memo is not None:
                    memo.keep_fit(job.key, found)
            self._jobs[job.key] = found
        return found

    def _judge(self, job: JobInfo) -> JobFit:
        matrix = self._matrix
        shapes = minimum_pods(job)
        largest = largest_pods(shapes)
        if not shapes:
            usable = np.ones(len(matrix), dtype=np.bool_)
        else:
            usable = np.zeros(len(matrix), dtype=np.bool_)
        why: str | None = None
        if job.podgroup.min_resources and len(matrix):
            minimum = Resource({k: float(v) for k, v in job.podgroup.min_resources.items()})
            why = _total_shortfall(minimum, self._total)
        distinct: dict[Shape, PodShape] = {}
        for shape in shapes:
            distinct.setdefault(shape.key, shape)
        for shape in distinct.values():
            ok, errors = self.shape(shape)
            usable = usable | ok
            if why is None and len(matrix) and not ok.any():
                why = (
                    f"0/{len(matrix)} nodes could ever hold pod {shape.name}, even empty: "
                    f"{_render(errors)}"
                )
        return JobFit(why=why, usable=usable, largest=largest)


def largest_pods(shapes: Sequence[PodShape]) -> Resource:
    """The per-dimension largest request among ``shapes``."""
    out: dict[str, float] = {}
    for shape in shapes:
        for name, amount in shape.requests.items():
            out[name] = max(out.get(name, 0.0), amount)
    return Resource(out)

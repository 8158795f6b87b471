"""``dependsOn`` rules (Volcano's validate/util.go with docs/design.md#every-violation's additions).

Port of volcano v1.12 ``pkg/webhooks/admission/jobs/validate/util.go`` ``topoSort`` /
``makeGraph`` (Kahn's algorithm: the job is a DAG iff every task is emitted), run only
when some task has a ``dependsOn``.

Deviations (docs/design.md#every-violation): Volcano reports an unknown task name and a name listed
twice only as "not a DAG" (the dependent task never reaches in-degree 0). Here each gets its own
violation and is left out of the graph, so the DAG message is kept for real cycles
(a self-dependency is a cycle: it gets its own violation *and* the DAG message, as in
Volcano's verdict). ``iteration`` must be ``any``, ``all`` or absent (Volcano accepts
any string). The DAG message keeps Volcano's wording and names the tasks left in cycles.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from vcbus.contracts.events.jobs_rejected import Violation
from vcbus.contracts.objects.job import TaskSpec

VALID_ITERATIONS: frozenset[str] = frozenset({"", "any", "all"})

NOT_A_DAG_MESSAGE = (
    "job has dependencies between tasks, but doesn't form a directed acyclic graph(DAG)"
)


def validate_dependencies(tasks: Sequence[TaskSpec]) -> Iterator[Violation]:
    """Yield every ``dependsOn`` violation of a job's tasks (names already defaulted).

    Args:
        tasks: the job's tasks in spec order, after mutation (so every task has a name).

    Yields:
        Per task: unknown names, duplicate names, self-dependency, bad iteration; then
        the DAG violation if the known dependencies form a cycle.
    """
    if all(task.depends_on is None for task in tasks):
        return
    names = {task.name for task in tasks}
    edges: dict[str, set[str]] = {}
    for index, task in enumerate(tasks):
        depends_on = task.depends_on
        if depends_on is None:
            continue
        here = f"spec.tasks[{index}].dependsOn"
        listed: set[str] = set()
        for position, name in enumerate(depends_on.name):
            where = f"{here}.name[{position}]"
            if name in listed:
                yield Violation(
                    path=where,
                    reason="DuplicateDependency",
                    message=f"dependsOn of task {task.name} names task {name} more than once",
                )
                continue
            listed.add(name)
            if name not in names:
                yield Violation(
                    path=where,
                    reason="UnknownDependency",
                    message=f"dependsOn of task {task.name} names unknown task {name}",
                )
                continue
            if name == task.name:
                yield Violation(
                    path=where,
                    reason="SelfDependency",
                    message=f"task {task.name} depends on itself",
                )
            edges.setdefault(name, set()).add(task.name)
        if depends_on.iteration not in VALID_ITERATIONS:
            yield Violation(
                path=f"{here}.iteration",
                reason="InvalidIteration",
                message=(
                    f"dependsOn.iteration of task {task.name} must be 'any' or 'all' (or absent), "
                    f"got '{depends_on.iteration}'"
                ),
            )
    in_cycles = _tasks_in_cycles(sorted(names), edges)
    if in_cycles:
        yield Violation(
            path="spec.tasks",
            reason="NotADag",
            message=f"{NOT_A_DAG_MESSAGE}: tasks on a cycle: {', '.join(in_cycles)}",
        )


def _tasks_in_cycles(names: list[str], edges: dict[str, set[str]]) -> list[str]:
    """Return the tasks on a cycle (sorted); empty when the dependencies form a DAG.

    Kahn's algorithm from the tasks nothing points to (Volcano's ``topoSort``), then the
    same from the other end, so tasks merely downstream of a cycle are not named.
    """
    left = _unsorted(names, edges)
    if not left:
        return []
    reverse: dict[str, set[str]] = {}
    for source in left:
        for target in edges.get(source, set()) & set(left):
            reverse.setdefault(target, set()).add(source)
    return _unsorted(left, reverse)


def _unsorted(names: list[str], edges: dict[str, set[str]]) -> list[str]:
    """Kahn's algorithm over ``names``; returns those never emitted, in ``names`` order."""
    members = set(names)
    in_degree = dict.fromkeys(names, 0)
    for source, targets in edges.items():
        if source in members:
            for target in targets & members:
                in_degree[target] += 1
    ready = [name for name in names if in_degree[name] == 0]
    while ready:
        current = ready.pop()
        for target in sorted(edges.get(current, set()) & members):
            in_degree[target] -= 1
            if in_degree[target] == 0:
                ready.append(target)
    return [name for name in names if in_degree[name] > 0]

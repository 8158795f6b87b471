"""What the controller derives from a job's spec alone, computed once per job.

Every input of a job asks the same questions of its spec: the PodGroup it should have
(minimum resources sum the parsed requests of the templates), the task order pods are
kept in, each task's replicas, what each task's pods take from their template. The
answers change only when an update is accepted, which puts another ``Job`` object on the
record. :func:`job_facts` answers them once per (job object, configuration object) and
keeps the answers in a bounded memo keyed on those objects' identity (a ``Job`` holds
dicts, so it has no hash).

The memo is a cache, not state: a miss (after a restart, a restore from the changelog,
an eviction) computes the same answers from the record, so decisions never depend on
what it holds. The configuration is treated as immutable, as everywhere in the core.
"""

from __future__ import annotations

from dataclasses import dataclass

from vcbus.contracts.objects.job import Job, TaskSpec
from vcbus.services.job_controller.conf import ControllerConf
from vcbus.services.job_controller.job_pods import PodTemplateFacts, template_facts
from vcbus.services.job_controller.podgroup import PodGroupSpec, podgroup_spec

MEMO_LIMIT = 4096
"""How many jobs' facts the memo keeps (the oldest entry goes first). Above the number of
jobs in flight it always hits; below, a miss costs one computation."""


@dataclass(frozen=True, slots=True)
class JobFacts:
    """The answers for one job under one configuration.

    Attributes:
        job: the job they are about (held, so its identity stays unique).
        conf: the configuration they assume.
        order: task name → position in the spec (pods are kept in that order).
        replicas: task name → ``replicas``.
        total_replicas: the pods the job has when none is missing (sum of ``replicas``).
        templates: per task of the spec, in spec order, what its pods take from it.
        podgroup: what the job's PodGroup takes from the job.
        has_dependencies: whether some task has a non-empty ``dependsOn``.
    """

    job: Job
    conf: ControllerConf
    order: dict[str, int]
    replicas: dict[str, int]
    total_replicas: int
    templates: tuple[PodTemplateFacts, ...]
    podgroup: PodGroupSpec
    has_dependencies: bool

    def template(self, task: TaskSpec) -> PodTemplateFacts:
        """Return the facts of one of the job's tasks (by identity; computed if foreign)."""
        for position, candidate in enumerate(self.job.spec.tasks):
            if candidate is task:
                return self.templates[position]
        return template_facts(
            task, self.job, self.conf.priority_classes, self.conf.default_scheduler_name
        )


def derive_facts(job: Job, conf: ControllerConf) -> JobFacts:
    """Compute the facts of ``job`` under ``conf`` (no memo)."""
    tasks = job.spec.tasks
    replicas = {task.name: task.replicas for task in tasks}
    return JobFacts(
        job=job,
        conf=conf,
        order={task.name: position for position, task in enumerate(tasks)},
        replicas=replicas,
        total_replicas=sum(replicas.values()),
        templates=tuple(
            template_facts(task, job, conf.priority_classes, conf.default_scheduler_name)
            for task in tasks
        ),
        podgroup=podgroup_spec(job, conf.priority_classes),
        has_dependencies=any(
            task.depends_on is not None and task.depends_on.name for task in tasks
        ),
    )


_memo: dict[tuple[int, int], JobFacts] = {}


def job_facts(job: Job, conf: ControllerConf) -> JobFacts:
    """Return the facts of ``job`` under ``conf``, from the memo when it has them."""
    key = (id(job), id(conf))
    facts = _memo.get(key)
    if facts is not None and facts.job is job and facts.conf is conf:
        return facts
    facts = derive_facts(job, conf)
    if len(_memo) >= MEMO_LIMIT:
        del _memo[next(iter(_memo))]
    _memo[key] = facts
    return facts

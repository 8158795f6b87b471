"""A job's recipe names its arguments as the fields of ``JobInfo`` and ``TaskInfo``."""

from __future__ import annotations

from dataclasses import fields

from vcbus.core.scheduling.framework.job_recipe import JobHead, RecipeCounters, TaskArgs
from vcbus.core.scheduling.model import JobInfo, TaskInfo


def test_task_arguments_are_the_leading_fields_of_a_task_by_name_and_order() -> None:
    """``TaskInfo(*args)`` puts each argument in the field of its name."""
    names = [f.name for f in fields(TaskInfo)]
    assert list(TaskArgs._fields) == names[: len(TaskArgs._fields)]
    assert names[len(TaskArgs._fields)] == "vector"


def test_job_head_is_the_fields_of_a_job_before_its_task_minimums() -> None:
    """``JobInfo(*head, task_min_available, ...)`` puts each part in its field."""
    names = [f.name for f in fields(JobInfo)]
    assert list(JobHead._fields) == names[: names.index("task_min_available")]


def test_recipe_counters_name_fields_of_a_job() -> None:
    """Each counter the recipe shares is one of the job's, public or kept."""
    names = {f.name for f in fields(JobInfo)}
    for counter in RecipeCounters._fields:
        assert counter in names or f"_{counter}" in names

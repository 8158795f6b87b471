"""Poison submissions: each once stalled, crashed or flooded a service
(docs/design.md#bounded-records, docs/design.md#names-and-numbers).

Every case is a ``jobs.submitted`` payload with the answer admission must give: the
reason codes of its rejection, or ``()`` for a job admitted. Shared by the end-to-end test
against the real broker and by the test that runs admission under its deploy/ memory
limit.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import yaml


@dataclass(frozen=True, slots=True)
class PoisonCase:
    """One payload and what admission answers: rejection reasons, or ``()`` (admitted)."""

    label: str
    payload: bytes
    reasons: tuple[str, ...]


def _job(name: str, *tasks: dict[str, Any], **metadata: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, **metadata},
        "spec": {"tasks": list(tasks)},
    }


def _task(name: str, replicas: int = 1, **fields: Any) -> dict[str, Any]:
    return {
        "name": name,
        "replicas": replicas,
        "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}},
        **fields,
    }


def _json(document: object) -> bytes:
    return json.dumps(document, separators=(",", ":")).encode()


def alias_bomb(levels: int = 9, width: int = 10) -> bytes:
    """A billion laughs: ``width ** levels`` values from a few hundred bytes."""
    lines = ["apiVersion: batch.volcano.sh/v1alpha1", "kind: Job", "metadata: {name: bomb}"]
    lines.append(f"l0: &l0 [{', '.join(['lol'] * width)}]")
    lines += [f"l{n}: &l{n} [{', '.join([f'*l{n - 1}'] * width)}]" for n in range(1, levels)]
    return "\n".join(lines).encode()


def alias_flood() -> bytes:
    """Aliases that expand to 31**4 = 923,521 empty mappings: just under the value limit."""
    lines = ["apiVersion: batch.volcano.sh/v1alpha1", "kind: Job", "metadata: {name: flood}"]
    lines += ["spec:", "  tasks:", "  - name: w", "    replicas: 1", "    template:", "      spec:"]
    lines.append("        containers: [{name: c, image: i}]")
    lines.append("        affinity:")  # a field admission keeps as written
    lines.append(f"          l0: &l0 [{', '.join(['{}'] * 31)}]")
    lines += [f"          l{n}: &l{n} [{', '.join([f'*l{n - 1}'] * 31)}]" for n in range(1, 4)]
    return "\n".join(lines).encode()


def poison_cases() -> list[PoisonCase]:
    """Hostile inputs, each with the answer admission gives."""
    recursive = (
        b"apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: &m {name: x, labels: *m}\n"
    )
    annotated = _task("w", 100, template={"metadata": {"annotations": {"n": "x" * 100_000}}})
    annotated["template"]["spec"] = {"containers": [{"name": "c", "image": "i"}]}
    bad_names = [_task(f"T_{index}") for index in range(9_000)]
    wide = [_task(f"t{index}") for index in range(10_000)]
    replicas_yaml = yaml.safe_dump(_job("sexagesimal", _task("w"))).replace(
        "replicas: 1", "replicas: 1:30"
    )
    return [
        PoisonCase("recursive-alias", recursive, ("RecursiveAlias",)),
        PoisonCase("alias-bomb", alias_bomb(), ("PayloadTooComplex",)),
        PoisonCase("alias-flood-923521-values", alias_flood(), ("JobTooLarge", "JobStateTooLarge")),
        PoisonCase(
            "half-a-million-values",
            _json(
                _job(
                    "flat",
                    _task(
                        "w",
                        template={
                            "spec": {
                                "containers": [{"name": "c", "image": "i"}],
                                "affinity": {"x": [0] * 500_000},
                            }
                        },
                    ),
                )
            ),
            ("JobStateTooLarge",),
        ),
        PoisonCase(
            "one-dependency-200000-times",
            _json(_job("deps", _task("a"), _task("b", dependsOn={"name": ["a"] * 200_000}))),
            ("DuplicateDependency",),
        ),
        PoisonCase(
            "110000-unknown-dependencies",
            _json(
                _job("unknown", _task("b", dependsOn={"name": [f"x{n}" for n in range(110_000)]}))
            ),
            ("UnknownDependency",),
        ),
        PoisonCase("9000-bad-task-names", _json(_job("names", *bad_names)), ("InvalidTaskName",)),
        PoisonCase(
            "valid-10000-tasks", _json(_job("wide", *wide)), ("JobTooLarge", "JobStateTooLarge")
        ),
        PoisonCase("10001-replicas", _json(_job("many", _task("w", 10_001))), ("TooManyReplicas",)),
        PoisonCase("100-kib-annotation-100-replicas", _json(_job("annotated", annotated)), ()),
        PoisonCase("job-name-A", _json(_job("A", _task("w"))), ("InvalidJobName",)),
        PoisonCase("job-name-a_b", _json(_job("a_b", _task("w"))), ("InvalidJobName",)),
        PoisonCase("job-name-a..b", _json(_job("a..b", _task("w"))), ("InvalidJobName",)),
        PoisonCase("replicas-1:30", replicas_yaml.encode(), ("InvalidType",)),
        PoisonCase(
            "full-width-quantity",
            _json(
                _job(
                    "fullwidth",
                    _task(
                        "w",
                        template={
                            "spec": {
                                "containers": [
                                    {
                                        "name": "c",
                                        "image": "i",
                                        "resources": {"requests": {"cpu": "１"}},
                                    }
                                ]
                            }
                        },
                    ),
                )
            ),
            ("InvalidQuantity",),
        ),
        PoisonCase(
            "label-key-and-value",
            _json(_job("labels", _task("w"), labels={"bad key": "-v"})),
            ("InvalidLabelKey", "InvalidLabelValue"),
        ),
    ]

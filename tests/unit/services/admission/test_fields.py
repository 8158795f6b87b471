"""Strict field validation: unknown fields found at their JSON path, with the closest name."""

from __future__ import annotations

import pytest

from vcbus.services.admission.fields import (
    FieldValidation,
    Shape,
    UnknownField,
    field_validation_of,
    known_only,
    unknown_fields,
)


def job(**spec: object) -> dict[str, object]:
    task = {
        "name": "w",
        "replicas": 2,
        "template": {
            "metadata": {"labels": {"anything": "goes"}},
            "spec": {"containers": [{"name": "c", "image": "i", "command": ["true"]}]},
        },
    }
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "j", "annotations": {"free": "form"}},
        "spec": {"tasks": [task], "plugins": {"svc": [], "any-name": []}, **spec},
    }


def test_a_job_of_known_fields_has_none_unknown_when_maps_hold_free_keys() -> None:
    assert unknown_fields(job(queue="default", minAvailable=1)) == ()


def test_typos_are_found_at_their_path_with_the_closest_known_name_when_misspelt() -> None:
    document = job(queu="q", minAvailble=1)
    task = document["spec"]["tasks"][0]  # type: ignore[index]
    task["replica"] = 4
    task["template"]["spec"]["containers"][0]["comand"] = ["sleep", "1"]
    task["template"]["spec"]["containers"][0]["env"] = [{"name": "A", "vaule": "1"}]
    task["template"]["spec"]["restartPolicyy"] = "Never"

    assert unknown_fields(document) == (
        UnknownField("spec.tasks[0].template.spec.containers[0].comand", "command"),
        UnknownField("spec.tasks[0].template.spec.containers[0].env[0].vaule", "value"),
        UnknownField("spec.tasks[0].template.spec.restartPolicyy", "restartPolicy"),
        UnknownField("spec.tasks[0].replica", "replicas"),
        UnknownField("spec.queu", "queue"),
        UnknownField("spec.minAvailble", "minAvailable"),
    )


def test_the_message_is_kubectls_with_a_hint_only_when_a_name_is_close() -> None:
    assert UnknownField("spec.queu", "queue").message == (
        'unknown field "spec.queu"; did you mean "queue"?'
    )
    assert UnknownField("spec.zzzzzz", None).message == 'unknown field "spec.zzzzzz"'
    assert unknown_fields({"spec": {"zzzzzz": 1}}, Shape(frozenset({"spec"}))) == ()
    assert unknown_fields(job(zzzzzz=1)) == (UnknownField("spec.zzzzzz", None),)


@pytest.mark.parametrize(
    ("header", "mode"),
    [
        (None, FieldValidation.STRICT),
        (b"Strict", FieldValidation.STRICT),
        (b"warn", FieldValidation.WARN),
        ("Ignore", FieldValidation.IGNORE),
        (b"lenient", FieldValidation.STRICT),
    ],
)
def test_the_header_names_the_mode_and_anything_else_is_strict(
    header: bytes | str | None, mode: FieldValidation
) -> None:
    assert field_validation_of(header) is mode


def test_known_only_drops_every_unknown_field_and_keeps_the_rest_as_written() -> None:
    document = job(queu="q")
    task = document["spec"]["tasks"][0]  # type: ignore[index]
    task["template"]["spec"]["containers"][0]["comand"] = ["x"]
    task["template"]["spec"]["priorityClass"] = "p"

    assert known_only(document) == job()
    assert unknown_fields(known_only(document)) == ()

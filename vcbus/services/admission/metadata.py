"""Labels and annotations as the API server validates them (docs/design.md#names-and-numbers).

Ports of Kubernetes' object-metadata rules:

- ``k8s.io/apimachinery@v0.31 pkg/apis/meta/v1/validation/validation.go``
  ``ValidateLabels``: every key a qualified name, every value a label value
  (:func:`vcbus.services.admission.names.label_value_errors`);
- ``k8s.io/apimachinery@v0.31 pkg/api/validation/objectmeta.go`` ``ValidateAnnotations``:
  every key a qualified name (checked in lower case), and keys plus values together at
  most ``TotalAnnotationSizeLimitB`` (256 KiB).

Messages are ``field.Invalid`` / ``field.TooLong`` texts: ``<path>: Invalid value:
"<key>": <errors>``. Applied to the job's metadata and to each task template's.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from vcbus.contracts.events.jobs_rejected import Violation
from vcbus.services.admission.names import label_value_errors, qualified_name_errors

TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024
"""``TotalAnnotationSizeLimitB``: keys and values of an object's annotations, in bytes."""


def validate_labels(labels: Mapping[str, str], path: str) -> Iterator[Violation]:
    """Violations of ``ValidateLabels`` for the labels at ``path`` (``metadata.labels``)."""
    for key, value in labels.items():
        key_errors = qualified_name_errors(key)
        if key_errors:
            yield Violation(
                path=path, reason="InvalidLabelKey", message=_invalid(path, key, key_errors)
            )
        value_errors = label_value_errors(value)
        if value_errors:
            yield Violation(
                path=f"{path}.{key}",
                reason="InvalidLabelValue",
                message=_invalid(path, value, value_errors),
            )


def validate_annotations(annotations: Mapping[str, str], path: str) -> Iterator[Violation]:
    """Violations of ``ValidateAnnotations`` for the annotations at ``path``."""
    total = 0
    for key, value in annotations.items():
        key_errors = qualified_name_errors(key.lower())
        if key_errors:
            yield Violation(
                path=path, reason="InvalidAnnotationKey", message=_invalid(path, key, key_errors)
            )
        total += len(key.encode()) + len(value.encode())
    if total > TOTAL_ANNOTATION_SIZE_LIMIT:
        yield Violation(
            path=path,
            reason="AnnotationsTooLong",
            message=(
                f"{path}: Too long: may not be more than {TOTAL_ANNOTATION_SIZE_LIMIT} bytes "
                f"(they are {total} bytes)"
            ),
        )


def _invalid(path: str, value: str, errors: list[str]) -> str:
    return f'{path}: Invalid value: "{value}": {"; ".join(errors)}'

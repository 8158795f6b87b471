"""The admission service: reads ``jobs.submitted``; writes ``jobs.admitted`` and ``jobs.rejected``.

This package is admission's face: the CLI (``vcbus admit``, ``submit``, ``delete``, the
cluster's certificates) imports what it needs from here, never from the modules below
(docs/architecture.md#faces).

Pure modules: :mod:`~vcbus.services.admission.bounded_parse` (bytes → a plain document, bounded),
:mod:`~vcbus.services.admission.decode` (bytes → Job, command or violations),
:mod:`~vcbus.services.admission.mutate` (Volcano's defaults with docs/design.md#minavailable),
:mod:`~vcbus.services.admission.rules` (every violation at once) and
:mod:`~vcbus.services.admission.core` (``decide``: one submission → one event).
"""

from vcbus.services.admission.bounded_parse import load_yaml
from vcbus.services.admission.core import (
    AdmissionLimits,
    Submission,
    apply_queue_event,
    decide,
    queues_from_manifests,
    spec_digest,
)
from vcbus.services.admission.decode import Decoded, decode, decode_submission
from vcbus.services.admission.fields import FieldValidation, unknown_fields
from vcbus.services.admission.mutate import mutate
from vcbus.services.admission.names import dns1123_subdomain_errors
from vcbus.services.admission.rules import validate, volcano_message

__all__ = [
    "AdmissionLimits",
    "Decoded",
    "FieldValidation",
    "Submission",
    "apply_queue_event",
    "decide",
    "decode",
    "decode_submission",
    "dns1123_subdomain_errors",
    "load_yaml",
    "mutate",
    "queues_from_manifests",
    "spec_digest",
    "unknown_fields",
    "validate",
    "volcano_message",
]

"""The admission service: reads ``jobs.submitted``; writes ``jobs.admitted`` and ``jobs.rejected``.

Pure modules: :mod:`~vcbus.services.admission.bounded_parse` (bytes → a plain document, bounded),
:mod:`~vcbus.services.admission.decode` (bytes → Job, command or violations),
:mod:`~vcbus.services.admission.mutate` (Volcano's defaults with docs/design.md#minavailable),
:mod:`~vcbus.services.admission.rules` (every violation at once) and
:mod:`~vcbus.services.admission.core` (``decide``: one submission → one event).
"""

from vcbus.services.admission.core import (
    AdmissionLimits,
    Submission,
    apply_queue_event,
    decide,
    queues_from_manifests,
    spec_digest,
)
from vcbus.services.admission.decode import Decoded, decode, decode_submission
from vcbus.services.admission.mutate import mutate
from vcbus.services.admission.rules import validate, volcano_message

__all__ = [
    "AdmissionLimits",
    "Decoded",
    "Submission",
    "apply_queue_event",
    "decide",
    "decode",
    "decode_submission",
    "mutate",
    "queues_from_manifests",
    "spec_digest",
    "validate",
    "volcano_message",
]

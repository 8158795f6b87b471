"""The admission service: reads ``jobs.submitted``; writes ``jobs.admitted`` and ``jobs.rejected``.

Pure modules: :mod:`~services.admission.bounded_parse` (bytes → a plain document, bounded),
:mod:`~services.admission.decode` (bytes → Job, command or violations),
:mod:`~services.admission.mutate` (Volcano's defaults with SPEC A1),
:mod:`~services.admission.rules` (every violation at once) and
:mod:`~services.admission.core` (``decide``: one submission → one event).
"""

from services.admission.core import (
    AdmissionLimits,
    Submission,
    apply_queue_event,
    decide,
    queues_from_manifests,
    spec_digest,
)
from services.admission.decode import Decoded, decode, decode_submission
from services.admission.mutate import mutate
from services.admission.rules import validate, volcano_message

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

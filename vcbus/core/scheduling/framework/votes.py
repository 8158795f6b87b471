"""Expected outcomes as values: votes, statuses and validation results.

Port of volcano@v1.12.0 ``pkg/scheduler/api/types.go`` (``ValidateResult``, ``Status`` codes)
and ``pkg/scheduler/plugins/util/util.go`` (``Permit``/``Abstain``/``Reject``). Why a task fits
no node is the model's (:mod:`vcbus.core.scheduling.fit_errors`).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Vote(enum.IntEnum):
    """A plugin's vote on a job (Volcano ``util.Permit``/``Abstain``/``Reject``)."""

    REJECT = -1
    ABSTAIN = 0
    PERMIT = 1


class Code(enum.IntEnum):
    """Status codes of a predicate (Volcano ``api.Success`` …)."""

    SUCCESS = 0
    ERROR = 1
    UNSCHEDULABLE = 2
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    WAIT = 4
    SKIP = 5


@dataclass(frozen=True, slots=True)
class Status:
    """Why a predicate rejected a node (Volcano ``api.Status``)."""

    code: Code
    reason: str
    plugin: str = ""


@dataclass(frozen=True, slots=True)
class ValidateResult:
    """Whether a job may be scheduled at all (Volcano ``api.ValidateResult``)."""

    passed: bool
    reason: str = ""
    message: str = ""

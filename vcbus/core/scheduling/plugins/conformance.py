"""Conformance: critical system pods are never chosen as victims.

Port of volcano@v1.12.0 ``pkg/scheduler/plugins/conformance/conformance.go``.
"""

from __future__ import annotations

from collections.abc import Sequence

from vcbus.core.scheduling.framework.conf import Arguments
from vcbus.core.scheduling.framework.session import Session
from vcbus.core.scheduling.framework.votes import Vote
from vcbus.core.scheduling.model import TaskInfo

NAME = "conformance"

_CRITICAL_CLASSES = frozenset({"system-cluster-critical", "system-node-critical"})
_SYSTEM_NAMESPACE = "kube-system"


def evictable(_: TaskInfo, candidates: Sequence[TaskInfo]) -> tuple[list[TaskInfo], Vote]:
    """Keep only candidates that are neither critical nor in ``kube-system``."""
    victims = [
        t
        for t in candidates
        if t.pod.priority_class_name not in _CRITICAL_CLASSES and t.namespace != _SYSTEM_NAMESPACE
    ]
    return victims, Vote.PERMIT


class ConformancePlugin:
    """The ``conformance`` plugin."""

    name = NAME

    def __init__(self, arguments: Arguments) -> None:
        self.arguments = arguments

    def on_session_open(self, ssn: Session) -> None:
        """Register the victim filters."""
        ssn.add_preemptable_fn(NAME, evictable)
        ssn.add_reclaimable_fn(NAME, evictable)

    def on_session_close(self, ssn: Session) -> None:
        """Nothing to report."""


def new(arguments: Arguments) -> ConformancePlugin:
    """Build the plugin."""
    return ConformancePlugin(arguments)

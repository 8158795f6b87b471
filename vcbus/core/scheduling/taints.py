"""Taints and tolerations, for the ``predicates`` plugin and the feasibility check.

Port of Kubernetes ``Toleration.ToleratesTaint`` (k8s.io/api core/v1 ``toleration.go``).
"""

from __future__ import annotations

from collections.abc import Sequence

from vcbus.contracts.objects.node import Taint
from vcbus.contracts.objects.pod import Toleration


def tolerates(toleration: Toleration, taint: Taint) -> bool:
    """Whether a toleration tolerates a taint (Kubernetes ``Toleration.ToleratesTaint``)."""
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    if toleration.operator == "Exists":
        return True
    return toleration.value == taint.value


def tolerates_all(tolerations: Sequence[Toleration], taints: Sequence[Taint]) -> bool:
    """Whether every (NoSchedule/NoExecute) taint is tolerated by some toleration."""
    return all(any(tolerates(t, taint) for t in tolerations) for taint in taints)

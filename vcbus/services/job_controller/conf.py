"""Configuration of the job-controller core."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class ControllerConf:
    """Configuration of the job-controller core.

    Attributes:
        priority_classes: priority class name → value (docs/design.md#records).
        default_scheduler_name: scheduler of pods whose template and job name none.
    """

    priority_classes: Mapping[str, int] = field(default_factory=dict)
    default_scheduler_name: str = "volcano"

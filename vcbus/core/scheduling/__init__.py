"""The pure scheduling framework shared by podgroup-enqueue and the allocator.

A port of Volcano's scheduler (session, actions, plugins, statements) with no I/O: feed a
``ClusterView`` from the state topics, take a ``snapshot()``, run a session on it
(``scheduler.run_session``), publish what it returns. ``scheduler`` holds the action and
plugin catalogue above ``framework``; see ``framework.session`` for the deviations.
"""

from vcbus.core.scheduling.cluster_view import ClusterEvent, ClusterView
from vcbus.core.scheduling.framework.conf import ConfError, SchedulerConf
from vcbus.core.scheduling.framework.results import (
    BindDecision,
    Explanation,
    PodGroupUpdate,
    SessionResult,
)
from vcbus.core.scheduling.framework.session import Session, close_session, open_session
from vcbus.core.scheduling.holds import Reservation, WillBind
from vcbus.core.scheduling.scenario_objects import ScenarioError
from vcbus.core.scheduling.scheduler import (
    conf_from_mapping,
    default_conf,
    default_enqueue_conf,
    parse_conf,
    run_session,
)
from vcbus.core.scheduling.snapshot import ClusterSnapshot, PodGroupState, PodState

__all__ = [
    "BindDecision",
    "ClusterEvent",
    "ClusterSnapshot",
    "ClusterView",
    "ConfError",
    "Explanation",
    "PodGroupState",
    "PodGroupUpdate",
    "PodState",
    "Reservation",
    "ScenarioError",
    "SchedulerConf",
    "Session",
    "SessionResult",
    "WillBind",
    "close_session",
    "conf_from_mapping",
    "default_conf",
    "default_enqueue_conf",
    "open_session",
    "parse_conf",
    "run_session",
]

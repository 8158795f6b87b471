"""The scheduler above its framework: the action and plugin catalogue, and one session run.

Port of volcano@v1.12.0 ``pkg/scheduler/scheduler.go`` (``runOnce``: open a session, run the
configured actions in order, close it) and of the factories that register actions and plugins
from outside the framework (``pkg/scheduler/actions/factory.go``,
``pkg/scheduler/plugins/factory.go``), with ``pkg/scheduler/util.go``'s configuration loading.

Deliberate deviations:
- No global registry: the catalogue is the two explicit tables ``actions.ACTIONS`` and
  ``plugins.PLUGIN_BUILDERS``, looked up here. ``framework`` never imports them (an
  import-linter contract keeps it so): ``open_session`` takes the builders as a parameter
  and ``framework.conf`` takes the known names as parameters.
- Loading a configuration checks it against the catalogue at start-up: unknown names fail
  with a suggestion, Volcano names vcbus lacks are skipped with one warning per name
  (``framework.conf``), and each plugin is built once with its arguments, as are the
  will-bind arguments, so a malformed argument fails here rather than in every cycle.
- ``run_session`` is a function of a snapshot, not a loop over a cache: the services' shells
  call it once per cycle.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from datetime import datetime

from vcbus.core.scheduling.actions import ACTIONS
from vcbus.core.scheduling.actions.enqueue import TAKE_BACK
from vcbus.core.scheduling.framework import conf as framework_conf
from vcbus.core.scheduling.framework.conf import (
    DEFAULT_ALLOCATOR_CONF,
    DEFAULT_ENQUEUE_CONF,
    ENQUEUE_SIDE_ACTIONS,
    ConfError,
    SchedulerConf,
)
from vcbus.core.scheduling.framework.results import SessionResult
from vcbus.core.scheduling.framework.session import PluginBuilder, close_session, open_session
from vcbus.core.scheduling.framework.session_cache import SessionCache
from vcbus.core.scheduling.framework.will_bind import ACTION as WILL_BIND_ACTION
from vcbus.core.scheduling.framework.will_bind import WillBindArgs
from vcbus.core.scheduling.plugins import PLUGIN_BUILDERS
from vcbus.core.scheduling.snapshot import ClusterSnapshot

__all__ = [
    "ACTIONS",
    "PLUGIN_BUILDERS",
    "conf_from_mapping",
    "default_conf",
    "default_enqueue_conf",
    "parse_conf",
    "run_session",
]


def parse_conf(text: str) -> SchedulerConf:
    """Parse a ``volcano-scheduler.conf`` (YAML or JSON) against the catalogue.

    Args:
        text: the configuration text.

    Returns:
        The configuration.

    Raises:
        ConfError: on bad YAML, an unknown action or plugin, a malformed entry, or an
            argument a plugin (or will-bind) refuses.
    """
    conf = framework_conf.parse_conf(
        text, known_actions=tuple(ACTIONS), known_plugins=tuple(PLUGIN_BUILDERS)
    )
    _check_arguments(conf)
    return conf


def conf_from_mapping(
    document: Mapping[object, object], *, default_actions: str = "allocate, backfill"
) -> SchedulerConf:
    """Build a configuration from an already-decoded mapping against the catalogue.

    Missing ``tiers`` and ``actions`` take their defaults (``framework.conf.conf_from_mapping``).

    Raises:
        ConfError: as ``parse_conf``.
    """
    conf = framework_conf.conf_from_mapping(
        document,
        known_actions=tuple(ACTIONS),
        known_plugins=tuple(PLUGIN_BUILDERS),
        default_actions=default_actions,
    )
    _check_arguments(conf)
    return conf


def default_conf() -> SchedulerConf:
    """Return the allocator's default configuration (``DEFAULT_ALLOCATOR_CONF``)."""
    return parse_conf(DEFAULT_ALLOCATOR_CONF)


def default_enqueue_conf() -> SchedulerConf:
    """Return podgroup-enqueue's default configuration (``DEFAULT_ENQUEUE_CONF``)."""
    return parse_conf(DEFAULT_ENQUEUE_CONF)


TAKE_BACK_ACTIONS = frozenset({"preempt", "reclaim"})
"""Allocator actions that take capacity back; enqueue then admits the jobs they could place."""


def split_conf(conf: SchedulerConf) -> tuple[SchedulerConf, SchedulerConf]:
    """The podgroup-enqueue side and the allocator side of one volcano-scheduler.conf.

    Enqueue takes the enqueue-side actions (``elect``, ``enqueue``, ``reserve``), the
    allocator the others, both with the same tiers, configurations and arguments; when the
    allocator side preempts or reclaims, enqueue also gets ``take-back`` (unless the file
    sets it), so a job those actions could place is admitted on a full cluster.
    """
    enqueue = tuple(a for a in conf.actions if a in ENQUEUE_SIDE_ACTIONS)
    allocate = tuple(a for a in conf.actions if a not in ENQUEUE_SIDE_ACTIONS)
    enqueue_arguments = dict(conf.arguments)
    if TAKE_BACK_ACTIONS & set(allocate):
        enqueue_arguments.setdefault(TAKE_BACK, True)
    return (
        dataclasses.replace(conf, actions=enqueue, arguments=enqueue_arguments),
        dataclasses.replace(conf, actions=allocate),
    )


def _check_arguments(conf: SchedulerConf) -> None:
    """Build each configured plugin once, and read will-bind's arguments, to fail early."""
    for tier in conf.tiers:
        for option in tier.plugins:
            try:
                PLUGIN_BUILDERS[option.name]({**conf.arguments, **option.arguments})
            except ValueError as exc:
                raise ConfError(f"plugin {option.name!r}: {exc}") from exc
    try:
        WillBindArgs.parse({**conf.arguments, **conf.action_arguments(WILL_BIND_ACTION)})
    except ValueError as exc:
        raise ConfError(f"action {WILL_BIND_ACTION!r}: {exc}") from exc


def run_session(
    snapshot: ClusterSnapshot,
    conf: SchedulerConf,
    *,
    now: datetime,
    builders: Mapping[str, PluginBuilder] | None = None,
    cache: SessionCache | None = None,
) -> SessionResult:
    """Open a session, run the configured actions in order, close it (``runOnce``).

    Args:
        snapshot: the cluster state of this cycle.
        conf: the scheduler configuration.
        now: the cycle's time.
        builders: plugin builders; the catalogue's ``PLUGIN_BUILDERS`` when omitted.
        cache: the service's job recipes (``session_cache``); ``None`` derives every job.

    Returns:
        What the session decided.
    """
    ssn = open_session(
        snapshot,
        conf.tiers,
        builders=builders if builders is not None else PLUGIN_BUILDERS,
        now=now,
        configurations=conf.configurations,
        arguments=conf.arguments,
        actions=conf.actions,
        cache=cache,
    )
    for name in conf.actions:
        ACTIONS[name]().execute(ssn)
    return close_session(ssn)

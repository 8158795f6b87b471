"""The scheduler configuration in ``volcano-scheduler.conf`` shape, parsed and checked early.

Port of volcano@v1.12.0 ``pkg/scheduler/conf/scheduler_conf.go`` (``SchedulerConfiguration``,
``Tier``, ``PluginOption``, ``Configuration``) and ``pkg/scheduler/util.go``
(``UnmarshalSchedulerConf``, the default configuration).

Deliberate deviations:
- An extension point a plugin option does not mention is enabled (Volcano's
  ``ApplyPluginConfDefaults``); ``PluginOption.disabled`` names the ones switched off.
- A plugin Volcano has and vcbus does not (``VOLCANO_PLUGINS``: ``sla``, ``tdm``,
  ``numa-aware``, ``task-topology``, ``capacity``, ``extender``, ``deviceshare``,
  ``network-topology-aware``, …), and the arguments of an action Volcano has and vcbus does
  not (``configurations`` for ``shuffle``), are left out with one
  warning per name (``SchedulerConf.skipped``), as Volcano runs without a plugin it cannot
  find. Any other unknown plugin, action, plugin-option key or non-scalar argument is an
  error that says how to fix it and suggests the closest known name (Volcano skips a
  misspelt plugin silently; it refuses an unknown action, and so does vcbus, even one of
  Volcano's that vcbus does not run).
- Scalar top-level keys other than ``actions``/``tiers``/``configurations`` (for instance
  ``overcommit-factor``, as the docs/design.md#scenarios scenario shorthand writes them) become
  global arguments every plugin sees under its own.
- The known action and plugin names are parameters: the catalogue lives above the framework
  (``vcbus.core.scheduling.scheduler``, which also builds each plugin once to check its
  arguments), as Volcano's ``framework`` package never imports its actions or plugins.
"""

from __future__ import annotations

import difflib
import enum
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

import yaml

ArgValue = str | int | float | bool
Arguments = Mapping[str, ArgValue]


class ConfError(ValueError):
    """A scheduler configuration that cannot be used; the message says how to fix it."""


class Kind(enum.StrEnum):
    """Extension points a plugin option can switch off (``enable<Kind>`` keys).

    ``NAMESPACE_ORDER``, ``HIERARCHY``, ``BEST_NODE`` and ``VICTIM`` are accepted, as
    Volcano's configurations write them, and gate nothing: no vcbus plugin registers such a
    function (docs/volcano-differences.md lists them).
    """

    JOB_ORDER = "JobOrder"
    NAMESPACE_ORDER = "NamespaceOrder"
    HIERARCHY = "Hierarchy"
    JOB_READY = "JobReady"
    JOB_PIPELINED = "JobPipelined"
    TASK_ORDER = "TaskOrder"
    PREEMPTABLE = "Preemptable"
    RECLAIMABLE = "Reclaimable"
    PREEMPTIVE = "Preemptive"
    QUEUE_ORDER = "QueueOrder"
    PREDICATE = "Predicate"
    BEST_NODE = "BestNode"
    NODE_ORDER = "NodeOrder"
    TARGET_JOB = "TargetJob"
    RESERVED_NODES = "ReservedNodes"
    JOB_ENQUEUED = "JobEnqueued"
    VICTIM = "Victim"
    JOB_STARVING = "JobStarving"
    OVERUSED = "Overused"
    ALLOCATABLE = "Allocatable"


_FLAG_KEYS: Mapping[str, Kind] = {f"enable{k.value}": k for k in Kind}

VOLCANO_PLUGINS = frozenset(
    {
        "binpack", "capacity", "cdp", "conformance", "deviceshare", "drf", "extender", "gang",
        "network-topology-aware", "nodegroup", "nodeorder", "numa-aware", "numaaware",
        "overcommit", "pdb", "predicates", "priority", "proportion", "rescheduling",
        "reservation", "resource-strategy-fit", "resourcequota", "sla", "task-topology", "tdm",
        "usage",
    }
)  # fmt: skip
"""Plugin names of Volcano (HEAD ``pkg/scheduler/plugins``, v1.5.1 ``reservation``);
``numaaware`` is the folder name some configurations use for ``numa-aware``."""

VOLCANO_ACTIONS = frozenset(
    {"allocate", "backfill", "elect", "enqueue", "preempt", "reclaim", "reserve", "shuffle"}
)
"""Action names of Volcano (HEAD ``pkg/scheduler/actions``, v1.5.1 ``elect``/``reserve``)."""


def _closest(name: str, *names: Collection[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``names``, or nothing."""
    pool = sorted(set().union(*names))
    match = difflib.get_close_matches(name, pool, n=1, cutoff=0.6)
    return f" (did you mean {match[0]!r}?)" if match else ""


@dataclass(frozen=True, slots=True)
class PluginOption:
    """One plugin in a tier: its name, arguments and switched-off extension points."""

    name: str
    arguments: Arguments = field(default_factory=dict)
    disabled: frozenset[Kind] = frozenset()

    def enabled(self, kind: Kind) -> bool:
        """Whether the plugin's ``kind`` extension point takes part."""
        return kind not in self.disabled


@dataclass(frozen=True, slots=True)
class Tier:
    """Plugins whose votes count together (Volcano ``conf.Tier``)."""

    plugins: tuple[PluginOption, ...]


@dataclass(frozen=True, slots=True)
class Configuration:
    """Arguments of one action (Volcano ``conf.Configuration``)."""

    name: str
    arguments: Arguments = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SchedulerConf:
    """A whole scheduler configuration."""

    actions: tuple[str, ...]
    tiers: tuple[Tier, ...]
    configurations: tuple[Configuration, ...] = ()
    arguments: Arguments = field(default_factory=dict)
    skipped: tuple[str, ...] = ()
    """One warning per Volcano plugin or action's arguments vcbus lacks and left out."""

    def action_arguments(self, name: str) -> Arguments:
        """Return the arguments configured for action ``name`` (empty when none)."""
        for configuration in self.configurations:
            if configuration.name == name:
                return configuration.arguments
        return {}


DEFAULT_ALLOCATOR_CONF = """\
actions: "allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
  - name: aging
"""
"""The allocator's default: Volcano's default tiers without ``overcommit`` (an enqueue
plugin), with ``binpack`` as the Helm chart adds it, and vcbus's ``aging`` queue order last
among the job orders (it orders only what priority, gang and drf leave tied)."""

DEFAULT_ENQUEUE_CONF = """\
actions: "elect, enqueue, reserve"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
  - name: reservation
- plugins:
  - name: overcommit
  - name: drf
  - name: proportion
  - name: aging
"""
"""podgroup-enqueue's default: the enqueue-side plugins of Volcano's default tiers,
with ``reservation`` in the first tier so its enqueue gate votes before the capacity checks,
and ``aging`` (the same queue order as the allocator's) last."""

DEFAULT_SCENARIO_TIERS = """\
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
  - name: reservation
- plugins:
  - name: overcommit
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
  - name: aging
"""
"""Tiers for a configuration that names enqueue-side actions but no tiers: both services'
plugins (a snapshot scenario runs both)."""

ENQUEUE_SIDE_ACTIONS = frozenset({"elect", "enqueue", "reserve"})


def parse_conf(
    text: str,
    *,
    known_actions: Collection[str],
    known_plugins: Collection[str],
) -> SchedulerConf:
    """Parse a ``volcano-scheduler.conf`` (YAML or JSON) and check every name in it.

    The names come from the scheduler's catalogue (``scheduler.parse_conf`` passes them and
    also checks each plugin's arguments); the framework knows no action or plugin itself.

    Args:
        text: the configuration text.
        known_actions: the action names allowed.
        known_plugins: the plugin names allowed.

    Returns:
        The configuration.

    Raises:
        ConfError: on bad YAML, an unknown action or plugin, or a malformed entry.
    """
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfError(f"scheduler configuration is not valid YAML: {exc}") from exc
    if document is None:
        document = {}
    if not isinstance(document, Mapping):
        raise ConfError("scheduler configuration must be a mapping with 'actions' and 'tiers'")
    return conf_from_mapping(document, known_actions=known_actions, known_plugins=known_plugins)


def conf_from_mapping(
    document: Mapping[object, object],
    *,
    known_actions: Collection[str],
    known_plugins: Collection[str],
    default_actions: str = "allocate, backfill",
) -> SchedulerConf:
    """Build a configuration from an already-decoded mapping (see ``parse_conf``).

    Missing ``tiers`` take the allocator's default tiers, or both services' plugins when an
    enqueue-side action (elect, enqueue, reserve) is configured; missing ``actions`` take
    ``default_actions``.
    """
    raw_actions = document.get("actions", default_actions)
    if not isinstance(raw_actions, str):
        raise ConfError(f"'actions' must be a comma-separated string, got {raw_actions!r}")
    actions = tuple(a.strip() for a in raw_actions.split(",") if a.strip())
    for name in actions:
        if name not in known_actions:
            lacking = " (a Volcano action vcbus does not run)" if name in VOLCANO_ACTIONS else ""
            raise ConfError(
                f"unknown action {name!r}{lacking or _closest(name, known_actions)} in actions "
                f"{raw_actions!r}; known actions: {', '.join(sorted(known_actions))}"
            )
    skipped: list[str] = []
    if "tiers" in document:
        tiers = _tiers(document["tiers"], known_plugins, skipped)
    else:
        text = (
            DEFAULT_SCENARIO_TIERS
            if ENQUEUE_SIDE_ACTIONS & set(actions)
            else DEFAULT_ALLOCATOR_CONF
        )
        tiers = _tiers(yaml.safe_load(text)["tiers"], known_plugins, skipped)
    configurations = _configurations(document.get("configurations", []), known_actions, skipped)
    arguments: dict[str, ArgValue] = {}
    for key in sorted(str(k) for k in document):
        if key in ("actions", "tiers", "configurations"):
            continue
        value = document[key]
        if not isinstance(value, str | int | float | bool):
            raise ConfError(
                f"unknown key {key!r} in the scheduler configuration; expected 'actions', "
                "'tiers', 'configurations' or a scalar global argument"
            )
        arguments[key] = value
    return SchedulerConf(
        actions=actions,
        tiers=tiers,
        configurations=configurations,
        arguments=arguments,
        skipped=tuple(dict.fromkeys(skipped)),
    )


def _arguments(raw: object, where: str) -> dict[str, ArgValue]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ConfError(f"arguments of {where} must be a mapping, got {raw!r}")
    out: dict[str, ArgValue] = {}
    for key in sorted(str(k) for k in raw):
        value = raw[key]
        if not isinstance(value, str | int | float | bool):
            raise ConfError(f"argument {key!r} of {where} must be a scalar, got {value!r}")
        out[key] = value
    return out


def _tiers(raw: object, plugins_known: Collection[str], skipped: list[str]) -> tuple[Tier, ...]:
    if not isinstance(raw, list):
        raise ConfError("'tiers' must be a list of {plugins: [...]} entries")
    tiers = []
    for position, entry in enumerate(raw):
        if not isinstance(entry, Mapping) or not isinstance(entry.get("plugins"), list):
            raise ConfError(f"tier {position} must be a mapping with a 'plugins' list")
        options = []
        for plugin in entry["plugins"]:
            option = _plugin_option(plugin, position, plugins_known)
            if option.name in plugins_known:
                options.append(option)
            else:
                skipped.append(
                    f"plugin {option.name!r} is a Volcano plugin vcbus does not implement; "
                    "running without it"
                )
        tiers.append(Tier(plugins=tuple(options)))
    return tuple(tiers)


def _plugin_option(raw: object, tier: int, plugins_known: Collection[str]) -> PluginOption:
    """One plugin entry; a Volcano plugin vcbus lacks is returned for the caller to skip."""
    if not isinstance(raw, Mapping) or not isinstance(raw.get("name"), str):
        raise ConfError(f"every plugin of tier {tier} needs a 'name', got {raw!r}")
    name = str(raw["name"])
    if name not in plugins_known and name not in VOLCANO_PLUGINS:
        raise ConfError(
            f"unknown plugin {name!r}{_closest(name, plugins_known, VOLCANO_PLUGINS)} in tier "
            f"{tier}; known plugins: {', '.join(sorted(plugins_known))}"
        )
    disabled = set()
    for key in sorted(str(k) for k in raw):
        if key in ("name", "arguments"):
            continue
        kind = _FLAG_KEYS.get(key) or _FLAG_KEYS.get(key.replace("enabled", "enable", 1))
        if kind is None:
            raise ConfError(
                f"unknown key {key!r} for plugin {name!r}; expected 'arguments' or one of "
                f"{', '.join(sorted(_FLAG_KEYS))}"
            )
        value = raw[key]
        if not isinstance(value, bool):
            raise ConfError(f"{key} of plugin {name!r} must be true or false, got {value!r}")
        if not value:
            disabled.add(kind)
    return PluginOption(
        name=name,
        arguments=_arguments(raw.get("arguments"), f"plugin {name!r}"),
        disabled=frozenset(disabled),
    )


def _configurations(
    raw: object, actions_known: Collection[str], skipped: list[str]
) -> tuple[Configuration, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ConfError("'configurations' must be a list of {name, arguments} entries")
    out = []
    for entry in raw:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
            raise ConfError(f"every configuration needs a 'name', got {entry!r}")
        name = str(entry["name"])
        if name in VOLCANO_ACTIONS and name not in actions_known:
            skipped.append(
                f"arguments of action {name!r}: a Volcano action vcbus does not run; ignored"
            )
            continue
        if name not in actions_known:
            raise ConfError(
                f"configuration for unknown action {name!r}"
                f"{_closest(name, actions_known, VOLCANO_ACTIONS)}; known actions: "
                f"{', '.join(sorted(actions_known))}"
            )
        out.append(Configuration(name=name, arguments=_arguments(entry.get("arguments"), name)))
    return tuple(out)

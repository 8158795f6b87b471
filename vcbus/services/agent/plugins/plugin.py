"""The face of a job plugin: what it is asked about a pod, and what it gives. Pure.

A plugin is a module of this package with ``PLUGIN``, a :class:`JobPlugin`, listed in
:mod:`vcbus.services.agent.plugins.registry` (Volcano keeps a folder per job plugin under
``pkg/controllers/job/plugins/``, each with its ``OnPodCreate``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from vcbus.contracts.objects.job import Job
from vcbus.services.agent.plugins.hosts import Hosts
from vcbus.services.agent.plugins.model import Env, PodPort


@dataclass(frozen=True, slots=True)
class Grant:
    """What one plugin gives one pod (its ``OnPodCreate``, and its ``OnJobAdd`` files)."""

    env: Env = ()
    """Appended to the containers' env."""
    init_env: Env = ()
    """Appended to the init containers' env."""
    init_containers: tuple[dict[str, object], ...] = ()
    """Init containers it adds after the pod's own."""
    files: Mapping[str, str] = field(default_factory=dict)
    """File contents by path relative to the pod's plugin directory."""


@dataclass(frozen=True, slots=True)
class PodCreate:
    """The pod a plugin is asked about, the job's hosts and where its files go."""

    job: Job
    task: str
    index: int
    arguments: Sequence[str]
    """The plugin's own arguments (``spec.plugins[name]``)."""
    hosts: Hosts
    directory: str
    """The absolute path the pod's plugin files are written under."""


@dataclass(frozen=True, slots=True)
class JobPlugin:
    """A job plugin: its name, what it gives a pod, the container port it opens (if any)."""

    name: str
    on_pod_create: Callable[[PodCreate], Grant]
    port: Callable[[Sequence[str]], PodPort] | None = None
    """The container port it opens on every pod, from its arguments."""

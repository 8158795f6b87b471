"""How ``vcbus up --agent``'s node runs its pods: in podman containers where they work.

``up`` decides for its agent (``--runtime``, default ``auto``), so that what it says and
what the demo needs agree: with podman working, the agent runs containers and, for
``--demo``, the demo's image (:mod:`vcbus.services.cli.demo_image`, built offline from this
host's Python) is there before the real jobs are submitted; where podman is missing or does
not work (or the image cannot be built), ``up`` says so plainly and the node runs its pods
as host processes, as an HPC node does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from vcbus.services.agent.face import podman
from vcbus.services.cli import demo_image
from vcbus.services.cli.agent import RUNTIMES

__all__ = ["RUNTIMES", "Choice", "choose"]

PROCESS = "process"
PODMAN = "podman"


@dataclass(frozen=True)
class Choice:
    """The runtime ``up`` gives its agent, and the line that says so; an error stops ``up``."""

    runtime: str
    said: str
    error: str = ""


def choose(
    asked: str,
    *,
    demo: bool,
    unavailable: Callable[[], str] = podman.unavailable,
    build: Callable[[], str] = demo_image.ensure,
) -> Choice:
    """The agent's runtime for ``up --runtime asked`` (``--demo``: with the demo's image)."""
    if asked == PROCESS:
        return Choice(PROCESS, "agent: pods run as host processes (--runtime process)")
    problem = unavailable()
    if not problem and demo:
        built = build()
        if built:
            problem = f"the demo's image {demo_image.IMAGE} could not be built: {built}"
    if not problem:
        image = f"; the demo's jobs in {demo_image.IMAGE}, this host's Python" if demo else ""
        return Choice(PODMAN, f"agent: pods run in podman containers{image}")
    if asked == PODMAN:
        return Choice(PODMAN, "", error=f"vcbus up --runtime podman: {problem}")
    return Choice(
        PROCESS,
        f"agent: containers are not available here ({problem}): pods run as host processes",
    )

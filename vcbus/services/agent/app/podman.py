"""Whether podman works on this node: a probe the agent runs before choosing its runtime.

I/O. podman counts as working when ``podman info`` answers with the options
:mod:`vcbus.services.agent.containers` gives every run; anything else (not installed, no
root, a runtime that refuses the host's cgroups) is the reason the agent says when it
falls back to host processes.
"""

from __future__ import annotations

import shutil
import subprocess

from vcbus.services.agent.containers import RUNTIME_OPTIONS

PROBE_TIMEOUT = 20.0


def podman_problem(podman: str = "podman") -> str:
    """Why podman cannot run this node's pods; empty when it can."""
    found = shutil.which(podman)
    if found is None:
        return f"{podman} is not installed"
    try:
        done = subprocess.run(
            [found, *RUNTIME_OPTIONS, "info", "--format", "{{.Host.OCIRuntime.Name}}"],
            capture_output=True,
            timeout=PROBE_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"{podman} info failed: {error}"
    if done.returncode != 0:
        return f"{podman} info failed: {done.stderr.decode(errors='replace').strip()[:200]}"
    return ""

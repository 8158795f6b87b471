"""``make run`` works: ``vcbus up --demo --agent`` starts everything, runs the demo jobs (the
real gang job in podman containers where podman works here, else as processes of this host,
as it says), exits 0."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.system import SERVICES
from tests.support import leftovers
from tests.support.processes import ROOT, service_env
from vcbus.services.agent.app import podman

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def _vcbus() -> list[str]:
    """The ``vcbus`` script of this environment (what ``make run`` calls)."""
    script = Path(sys.executable).with_name("vcbus")
    return [str(script)] if script.exists() else [sys.executable, "-m", "vcbus.services.cli"]


def test_demo_completes_every_job_when_vcbus_up_runs_on_a_fresh_log_dir(tmp_path: Path) -> None:
    """Its own broker, topics and five services; no ``KAFKA_*``/``VCBUS_*``/``OTEL_*`` given."""
    log_dir = tmp_path / "logs"
    env = service_env("", "")
    for name in ("KAFKA_BOOTSTRAP_SERVERS", "VCBUS_TOPIC_PREFIX"):
        env.pop(name)

    # a node of its own: an agent sweeps its node's containers that it does not hold, and
    # another run of this test may be on the host (its node named after the host)
    up = ["up", "--demo", "--agent", "--node-name", f"make-run-{os.getpid()}"]
    done = leftovers.run_owned(
        [*_vcbus(), *up, "--log-dir", str(log_dir), "--timeout", "200"],
        env=env,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=260,
        check=False,
    )

    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "demo: all jobs completed" in done.stdout, output
    exports = re.findall(
        r"^  export KAFKA_BOOTSTRAP_SERVERS=127\.0\.0\.1:\d+ VCBUS_KAFKA_CREDENTIALS=\S+$",
        done.stdout,
        re.M,
    )
    assert len(exports) == 1, output
    progress = re.findall(r"^demo: 4 jobs: (.+)$", done.stdout, re.M)
    assert progress[-1] == "Completed 4", output
    assert len(progress) >= 2, output  # shown as the phases changed, not only at the end
    # it says what it does while the services start, and why a job waits
    assert re.search(r"^starting services: .+… \(\d/5 ready\)$", done.stdout, re.M), output
    assert "services ready: " in done.stdout, output
    assert re.search(r"^demo: default/[a-z-]+ waits: \w+", done.stdout, re.M), output
    assert sorted(path.stem for path in log_dir.glob("*.log")) == sorted([*SERVICES, "agent"])
    assert "default/pytorch-rendezvous  Completed" in done.stdout, output
    problem = podman.unavailable()
    said = (
        f"agent: containers are not available here ({problem}): pods run as host processes"
        if problem
        else "agent: pods run in podman containers; the demo's jobs in "
        "localhost/vcbus-demo-python:1, this host's Python"
    )
    assert said in done.stdout.splitlines(), output

"""A stand-alone agent whose broker went away stops cleanly on SIGTERM: exit 0, no traceback.

The agent runs as its own process against a broker of the test's own; the broker is
stopped, the agent's Kafka client says it lost it, then the agent gets SIGTERM.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.support.processes import ServiceProcess, event, service_env
from vcbus.core.bus.broker import EmbeddedBroker

pytestmark = pytest.mark.slow


def test_sigterm_after_the_broker_went_away_stops_the_agent_without_a_traceback(
    own_broker: EmbeddedBroker,
) -> None:
    data = Path(tempfile.mkdtemp(prefix="t-u43-agent-"))
    data.chmod(0o711)
    env = service_env(own_broker.bootstrap_servers, f"t-{os.getpid()}-agent-gone.")
    args = ["agent", "--data-dir", str(data), "--listen-port", "0", "--node-name", "t-gone"]
    if os.geteuid() == 0:
        args += ["--run-as", "nobody"]
    agent = ServiceProcess("agent", "vcbus.services.cli", args, env)
    agent.start()
    try:
        agent.wait_for(event("partitions_assigned"))
        own_broker.stop()
        agent.wait_for(lambda line: line.get("level") == "error" and "aiokafka" in str(line))
        status = agent.terminate()
        agent.close()
        text = agent.tail(10_000)
        assert "Traceback" not in text, text
        assert status == 0, text
        assert agent.matching(event("service_stopping"))
    finally:
        agent.close()
        shutil.rmtree(data, ignore_errors=True)

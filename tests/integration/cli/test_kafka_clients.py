"""The README's lines for "any Kafka client", run as written against the embedded broker.

The aiokafka line is run with the project's own interpreter; the kcat lines with the kcat
on this machine when there is one (CI installs it): a kcat on librdkafka 2.2 or later
publishes and reads the job, an older one fails as the README says it does.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import subprocess
import sys
from pathlib import Path

import aiokafka
import pytest

from vcbus.core.bus.broker import EmbeddedBroker

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[3]
README = (ROOT / "README.md").read_text()
GANG = (ROOT / "examples" / "jobs" / "gang.yaml").read_bytes()


def _lines(start: str) -> list[str]:
    """The README's ``sh`` block whose first line starts with ``start``, line by line."""
    blocks: list[str] = re.findall(r"```sh\n(.*?)```", README, re.DOTALL)
    for block in blocks:
        if block.startswith(start):
            return block.splitlines()
    raise AssertionError(f"the README has no sh block starting {start!r}")


def _records(bootstrap: str, topic: str) -> list[tuple[bytes | None, bytes]]:
    """Every record of ``topic`` (one partition or more), read from the start."""

    async def read() -> list[tuple[bytes | None, bytes]]:
        consumer = aiokafka.AIOKafkaConsumer(
            topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest"
        )
        await consumer.start()
        try:
            partitions = consumer.assignment() or {
                aiokafka.TopicPartition(topic, n)
                for n in consumer.partitions_for_topic(topic) or ()
            }
            ends = await consumer.end_offsets(list(partitions))
            out: list[tuple[bytes | None, bytes]] = []
            for _ in range(20):
                if len(out) >= sum(ends.values()):
                    break
                batches = await consumer.getmany(timeout_ms=500)
                out += [(r.key, r.value or b"") for batch in batches.values() for r in batch]
            return out
        finally:
            await consumer.stop()

    return asyncio.run(read())


def _run(line: str, broker: EmbeddedBroker) -> subprocess.CompletedProcess[str]:
    line = line.replace("localhost:9092", broker.bootstrap_servers)
    line = line.replace(".venv/bin/python", sys.executable)
    return subprocess.run(
        ["bash", "-c", line], cwd=ROOT, capture_output=True, text=True, timeout=60, check=False
    )


def test_the_readme_aiokafka_line_publishes_the_job_keyed(own_broker: EmbeddedBroker) -> None:
    lines = _lines(".venv/bin/python -c")
    result = _run("\n".join(lines), own_broker)
    assert (result.returncode, result.stderr) == (0, "")
    assert _records(own_broker.bootstrap_servers, "vcbus.jobs.submitted") == [
        (b"default/gang", GANG)
    ]


def _librdkafka(kcat: str) -> tuple[int, ...]:
    version = subprocess.run([kcat, "-V"], capture_output=True, text=True, check=True).stdout
    found = re.search(r"librdkafka (\d+)\.(\d+)\.(\d+)", version)
    assert found, version
    return tuple(int(part) for part in found.groups())


def test_the_readme_kcat_lines_work_or_fail_as_the_readme_says(own_broker: EmbeddedBroker) -> None:
    kcat = shutil.which("kcat")
    if kcat is None:
        pytest.skip("kcat is not installed (apt-get install kcat)")
    produce, consume = _lines("kcat -P")
    result = _run(produce, own_broker)
    if _librdkafka(kcat) < (2, 2, 0):
        assert result.returncode != 0
        assert "ApiVersionRequest failed: Local: Read underflow" in result.stderr
        return
    assert (result.returncode, result.stderr) == (0, "")
    assert _records(own_broker.bootstrap_servers, "vcbus.jobs.submitted") == [
        (b"default/gang", GANG)
    ]
    read = _run(consume.replace("vcbus.jobs.status", "vcbus.jobs.submitted") + " -e", own_broker)
    assert read.stdout.startswith("default/gang apiVersion")

"""``vcbus broker --listen/--advertise``: other hosts reach it at the address it advertises."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from vcbus.core.bus.broker import free_port

pytestmark = pytest.mark.slow

ADVERTISED = "127.0.0.2"
"""A loopback address other than 127.0.0.1 stands for this host's routable one."""


async def _round_trip(bootstrap: str) -> tuple[set[str], bytes]:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        await producer.send_and_wait("t-listen", b"hello", partition=0)
        hosts = {broker.host for broker in producer.client.cluster.brokers()}
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(
        "t-listen", bootstrap_servers=bootstrap, auto_offset_reset="earliest"
    )
    await consumer.start()
    try:
        record = await asyncio.wait_for(consumer.getone(), 30)
    finally:
        await consumer.stop()
    return hosts, record.value or b""


def test_a_broker_on_every_interface_advertises_the_given_address_and_clients_use_it():
    port = free_port()
    with subprocess.Popen(
        [
            sys.executable,
            "-m",
            "vcbus.services.cli",
            "broker",
            "--listen",
            f"0.0.0.0:{port}",
            "--advertise",
            ADVERTISED,
        ],
        stdout=subprocess.PIPE,
        text=True,
    ) as command:
        try:
            assert command.stdout is not None
            line = command.stdout.readline()
            assert line == f"KAFKA_BOOTSTRAP_SERVERS={ADVERTISED}:{port}\n"

            hosts, value = asyncio.run(_round_trip(f"127.0.0.1:{port}"))

            assert hosts == {ADVERTISED}
            assert value == b"hello"
        finally:
            command.terminate()
            command.wait(timeout=30)


def test_a_broker_that_would_advertise_every_interface_is_refused_with_the_fix():
    done = subprocess.run(
        [sys.executable, "-m", "vcbus.services.cli", "broker", "--listen", "0.0.0.0:0"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "which no client can connect to" in done.stderr
    assert "pass --advertise HOST[:PORT]" in done.stderr
    assert done.stdout == ""

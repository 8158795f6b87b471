"""Every view says amounts in cores and Gi: ``describe``, ``get``, and the scheduler's words."""

from __future__ import annotations

import json

import msgspec

from tests.unit.services.cli.builders import NOW, SETTINGS, build_node, publish
from tests.unit.services.cli.test_get import listing
from vcbus.contracts import NodeRegistered
from vcbus.core.bus.memory import InMemoryBus
from vcbus.core.scheduling.resource import Resource, brief
from vcbus.services.cli.describe_node import describe_node_on

ODD = {"cpu": 31100, "memory": 329853488333, "pods": 110}
"""What a node of 31.1 cores and 307.2 Gi offers, in base units (milli-cpu, bytes)."""


def odd_node(name: str) -> NodeRegistered:
    node = build_node(name).node
    return NodeRegistered(
        event_id=f"{name}-odd", occurred_at=NOW, node=msgspec.structs.replace(node, allocatable=ODD)
    )


async def test_describe_node_says_cores_and_gi() -> None:
    bus = InMemoryBus()
    await publish(bus, odd_node("big"))

    text = await describe_node_on(bus, SETTINGS, "big", now=NOW)

    assert text is not None
    assert "cpu=31.1,memory=307.2Gi" in text
    assert "31100m" not in text
    assert "329853488333" not in text


async def test_get_nodes_says_cores_and_gi_and_its_json_keeps_quantities() -> None:
    bus = InMemoryBus()
    await publish(bus, odd_node("big"))

    table = await listing(bus, "nodes")
    obj = json.loads(await listing(bus, "nodes", output="json"))["items"][0]

    assert "cpu=31.1,memory=307.2Gi" in table
    assert obj["allocatable"]["cpu"] == "31100m"


def test_the_schedulers_messages_say_cores_and_gi() -> None:
    resource = Resource({"cpu": 7200.0, "memory": float(ODD["memory"])})
    assert brief(resource, ("cpu", "memory")) == "cpu 7.2, memory 307.2Gi"

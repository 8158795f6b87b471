"""An in-memory replay creates its topics as the shipped topic table says, and compacts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from vcbus.core.bus.memory import InMemoryBus
from vcbus.core.bus.records import TopicConfig
from vcbus.services.simulation import run
from vcbus.services.simulation.run import simulate_document
from vcbus.services.simulation.swf import Shape, read_trace, trace_document

TRACE = """\
; MaxProcs: 2
1  0 -1  30 1 -1 -1 1 -1 -1 1 -1 -1 -1 0 -1 -1 -1
2 10 -1  30 2 -1 -1 2 -1 -1 1 -1 -1 -1 0 -1 -1 -1
"""


class _Watched(InMemoryBus):
    """An in-memory bus that keeps the options it was made with and the topics created."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.options = options
        self.created: list[TopicConfig] = []

    async def ensure_topics(self, topics: Sequence[TopicConfig]) -> None:
        self.created.extend(topics)
        await super().ensure_topics(topics)


def test_a_replay_compacts_the_topics_the_shipped_table_compacts(
    monkeypatch: pytest.MonkeyPatch,
):
    made: list[_Watched] = []

    def watched(**options: Any) -> _Watched:
        made.append(_Watched(**options))
        return made[-1]

    monkeypatch.setattr(run, "InMemoryBus", watched)
    document = trace_document(read_trace(TRACE.splitlines()), Shape(nodes=2))
    outcome: dict[str, Any] = simulate_document(document)
    assert outcome["summary"]["finishedJobs"] == 2
    (bus,) = made
    assert bus.options["compact"] is True
    policies = {topic.name: topic.configs.get("cleanup.policy") for topic in bus.created}
    assert policies["vcbus.cluster.nodes.changelog"] == "compact"
    assert policies["vcbus.job-controller.jobs.changelog"] == "compact"
    assert policies["vcbus.nodes"] == "compact"
    assert policies["vcbus.pods.status"] is None  # kept whole: retention.ms -1

"""``vcbus serve``'s scheduler configuration: checked at start-up, Volcano-only names logged."""

from __future__ import annotations

from pathlib import Path

import pytest
from structlog.testing import capture_logs

from vcbus.core.runtime.settings import SettingsError
from vcbus.core.scheduling.framework.conf import ConfError
from vcbus.services.cli.serve import ALLOCATOR_SIDE, ENQUEUE_SIDE, priority_classes, scheduler_conf

CONF = """
actions: "allocate, backfill"
tiers:
- plugins:
  - name: gang
  - name: extender
- plugins:
  - name: predicates
  - name: deviceshare
"""


def test_service_logs_one_warning_per_volcano_plugin_it_lacks_when_the_conf_names_them(
    tmp_path: Path,
) -> None:
    path = tmp_path / "volcano-scheduler.conf"
    path.write_text(CONF)

    with capture_logs() as logs:
        conf = scheduler_conf(str(path))

    assert conf is not None
    assert [[p.name for p in t.plugins] for t in conf.tiers] == [["gang"], ["predicates"]]
    skipped = [e for e in logs if e["event"] == "scheduler_conf_skipped"]
    assert [(e["log_level"], e["detail"].split(" is ")[0]) for e in skipped] == [
        ("warning", "plugin 'extender'"),
        ("warning", "plugin 'deviceshare'"),
    ]


def test_service_refuses_a_misspelt_plugin_with_the_closest_name(tmp_path: Path) -> None:
    path = tmp_path / "volcano-scheduler.conf"
    path.write_text(CONF.replace("name: gang", "name: gnag"))

    with pytest.raises(ConfError, match=r"unknown plugin 'gnag' \(did you mean 'gang'\?\)"):
        scheduler_conf(str(path))


PRIORITY_CLASSES = """
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high-priority}
value: 1000
---
low: 10
"""


def test_priority_classes_read_kubernetes_objects_and_a_plain_map(tmp_path: Path) -> None:
    path = tmp_path / "priority-classes.yaml"
    path.write_text(PRIORITY_CLASSES)
    assert priority_classes(str(path)) == {"high-priority": 1000, "low": 10}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: x}\n",
            "{path} (document 1): value: a PriorityClass needs a whole-number value",
        ),
        ("---\nlow: ten\n", "{path}: low: expected a whole number, got 'ten'"),
    ],
)
def test_a_priority_class_that_does_not_read_is_a_settings_error_naming_it(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "priority-classes.yaml"
    path.write_text(text)
    with pytest.raises(SettingsError) as caught:
        priority_classes(str(path))
    assert str(caught.value) == message.format(path=path)


def test_one_whole_volcano_conf_serves_both_scheduling_services_each_its_side() -> None:
    path = Path(__file__).resolve().parents[4] / "deploy" / "scheduler" / "preempt-reclaim.yaml"
    enqueue = scheduler_conf(str(path), ENQUEUE_SIDE)
    allocator = scheduler_conf(str(path), ALLOCATOR_SIDE)
    assert enqueue is not None
    assert allocator is not None
    assert enqueue.actions == ("enqueue",)
    assert enqueue.arguments["take-back"] is True
    assert allocator.actions == ("allocate", "preempt", "reclaim", "backfill")
    assert "take-back" not in allocator.arguments


def test_a_conf_of_one_service_is_taken_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "allocator.yaml"
    path.write_text('actions: "allocate, backfill"\n')
    conf = scheduler_conf(str(path), ENQUEUE_SIDE)
    assert conf is not None
    assert conf.actions == ("allocate", "backfill")

"""``vcbus serve``'s scheduler configuration: checked at start-up, Volcano-only names logged."""

from __future__ import annotations

from pathlib import Path

import pytest
from structlog.testing import capture_logs

from services.cli.serve import scheduler_conf
from shared.scheduling.framework.conf import ConfError

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

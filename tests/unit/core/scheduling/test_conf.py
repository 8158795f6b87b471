"""Scheduler configuration: volcano-scheduler.conf shape, checked at start-up."""

from __future__ import annotations

import pytest

from vcbus.core.scheduling.framework.conf import ConfError, Kind
from vcbus.core.scheduling.scheduler import default_conf, parse_conf

VOLCANO_CONF = """
actions: "allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: proportion
  - name: nodeorder
    arguments:
      leastrequested.weight: 2
  - name: binpack
configurations:
- name: allocate
  arguments:
    promote-pending: true
"""


def test_flags_and_arguments_are_read_when_parsing_a_volcano_conf() -> None:
    conf = parse_conf(VOLCANO_CONF)
    assert conf.actions == ("allocate", "backfill")
    names = [[p.name for p in t.plugins] for t in conf.tiers]
    assert names == [
        ["priority", "gang", "conformance"],
        ["drf", "predicates", "proportion", "nodeorder", "binpack"],
    ]
    gang = conf.tiers[0].plugins[1]
    assert not gang.enabled(Kind.PREEMPTABLE)
    assert gang.enabled(Kind.JOB_READY)
    assert conf.tiers[1].plugins[3].arguments == {"leastrequested.weight": 2}
    assert conf.action_arguments("allocate") == {"promote-pending": True}


def test_actions_are_allocate_then_backfill_when_using_the_default_conf() -> None:
    assert default_conf().actions == ("allocate", "backfill")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('actions: "allocate, shuffle"', "unknown action 'shuffle' \\(a Volcano action vcbus"),
        ('actions: "alocate"', "unknown action 'alocate' \\(did you mean 'allocate'\\?\\)"),
        (
            "actions: allocate\ntiers:\n- plugins:\n  - name: proportoin",
            "unknown plugin 'proportoin' \\(did you mean 'proportion'\\?\\)",
        ),
        (
            "actions: allocate\nconfigurations:\n- name: alocate",
            "configuration for unknown action 'alocate' \\(did you mean 'allocate'\\?\\)",
        ),
        ("actions: allocate\ntiers:\n- plugins:\n  - name: magic", "unknown plugin 'magic'"),
        (
            "actions: allocate\ntiers:\n- plugins:\n  - name: gang\n    enableMagic: true",
            "unknown key 'enableMagic'",
        ),
        ("actions: allocate\ntier: []", "unknown key 'tier'"),
        ("- just a list", "must be a mapping"),
        ("actions: [allocate]", "comma-separated string"),
    ],
)
def test_parse_fails_with_a_helpful_message_when_conf_is_wrong(text: str, message: str) -> None:
    with pytest.raises(ConfError, match=message):
        parse_conf(text)


def test_message_lists_the_known_actions_when_an_action_is_unknown() -> None:
    with pytest.raises(
        ConfError, match="known actions: allocate, backfill, elect, enqueue, preempt, reclaim"
    ):
        parse_conf('actions: "shuffle, allocate"')


def test_scalar_top_level_keys_become_global_arguments_when_parsed() -> None:
    conf = parse_conf('actions: "allocate"\novercommit-factor: 1.2')
    assert conf.arguments == {"overcommit-factor": 1.2}


VOLCANO_ONLY_CONF = """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: sla
    arguments:
      sla-waiting-time: 1h
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: numa-aware
  - name: task-topology
  - name: sla
configurations:
- name: shuffle
  arguments:
    preemptable: true
- name: allocate
  arguments:
    promote-pending: true
"""


def test_volcano_plugins_vcbus_lacks_are_left_out_with_one_warning_each_when_parsed() -> None:
    conf = parse_conf(VOLCANO_ONLY_CONF)

    names = [[p.name for p in t.plugins] for t in conf.tiers]
    assert names == [["priority", "gang"], ["drf", "predicates", "proportion"]]
    assert conf.action_arguments("allocate") == {"promote-pending": True}
    assert [c.name for c in conf.configurations] == ["allocate"]
    assert conf.skipped == (
        "plugin 'sla' is a Volcano plugin vcbus does not implement; running without it",
        "plugin 'numa-aware' is a Volcano plugin vcbus does not implement; running without it",
        "plugin 'task-topology' is a Volcano plugin vcbus does not implement; running without it",
        "arguments of action 'shuffle': a Volcano action vcbus does not run; ignored",
    )


def test_nothing_is_skipped_when_every_name_is_implemented() -> None:
    assert parse_conf(VOLCANO_CONF).skipped == ()

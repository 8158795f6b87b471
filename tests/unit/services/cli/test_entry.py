"""The ``vcbus`` entry point: how a failure no command expected is reported."""

from __future__ import annotations

import argparse

import pytest

from vcbus.services.cli import admit, main


def boom(args: argparse.Namespace) -> int:
    raise RuntimeError("the \x1b[2J unexpected")


def test_an_unexpected_failure_is_two_lines_and_debug_adds_the_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(admit, "run", boom)

    assert main(["admit", "job.yaml"]) == 1
    out, err = capsys.readouterr()
    assert (out, err.splitlines()) == (
        "",
        [
            "vcbus admit: RuntimeError: the \\u001b[2J unexpected",
            "  this is a fault in vcbus; run again with --debug to see where, and report it",
        ],
    )

    assert main(["admit", "--debug", "job.yaml"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("Traceback (most recent call last):")
    assert 'raise RuntimeError("the \\x1b[2J unexpected")' in err
    assert err.splitlines()[-2] == "vcbus admit: RuntimeError: the \\u001b[2J unexpected"


def test_an_interrupt_ends_quietly_with_130(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupted(args: argparse.Namespace) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(admit, "run", interrupted)

    assert main(["admit", "job.yaml"]) == 130
    assert capsys.readouterr() == ("", "")

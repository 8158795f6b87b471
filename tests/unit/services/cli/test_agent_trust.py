"""``vcbus agent --trust``: the public keys of the launches a node runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.services.cli.test_agent import data_dir, options
from vcbus.core.authority import TRUST_FILE, Role, write_keys
from vcbus.core.runtime.settings import SettingsError

__all__ = ["data_dir"]


def test_an_agent_given_a_trust_file_trusts_its_keys(data_dir: Path, tmp_path: Path) -> None:
    write_keys(tmp_path)
    made = options(data_dir, "--trust", str(tmp_path / TRUST_FILE))
    assert made.trust is not None
    assert all(len(made.trust.keys[role]) == 1 for role in Role)


def test_an_agent_without_a_trust_file_verifies_nothing(data_dir: Path) -> None:
    assert options(data_dir).trust is None


def test_a_trust_file_that_does_not_read_is_refused_naming_it(
    data_dir: Path, tmp_path: Path
) -> None:
    bad = tmp_path / "trust"
    bad.write_text("admission AAAA\n")
    with pytest.raises(SettingsError, match=r"--trust: .*trust:1"):
        options(data_dir, "--trust", str(bad))
    with pytest.raises(SettingsError, match=r"--trust: .*missing"):
        options(data_dir, "--trust", str(tmp_path / "missing"))

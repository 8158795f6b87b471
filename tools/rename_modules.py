"""Rename modules whose names do not say what they own, and rewrite every reference to them.

Re-runnable and idempotent: run it from the repository root on any later tree
(``python tools/rename_modules.py``); it moves (``git mv``) what is still under an old name and
rewrites references by module path (dotted ``vcbus.x.y`` and slashed ``vcbus/x/y.py`` forms,
and single-dot relative imports inside the renamed module's package), never by line. A second
run changes nothing. ``--check`` reports what would change and exits 1 if anything would.
It ends by sorting the imports it changed and formatting them with ruff (``--ruff``, found on
``PATH`` by default), since a renamed module can sort elsewhere.

The layout it leads to is docs/architecture.md#layout.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

# Module renames, old dotted path -> new dotted path. A package rename moves everything under
# it; a more specific rename wins over a package rename that contains it.
MODULES: dict[str, str] = {
    # The domain core: what every service is built on, not leftovers.
    "vcbus.shared": "vcbus.core",
    # Votes, statuses and validation results of the scheduling framework.
    "vcbus.shared.scheduling.framework.status": "vcbus.core.scheduling.framework.votes",
    # The reservation's changes inside a session (the plugin keeps Volcano's name).
    "vcbus.shared.scheduling.framework.reservation": (
        "vcbus.core.scheduling.framework.reservation_changes"
    ),
    # `vcbus up`'s live view.
    "vcbus.shared.views.status": "vcbus.core.views.live",
    # The reservation as users see it.
    "vcbus.shared.views.reservation": "vcbus.core.views.reservation_view",
    # The one fold of pods.
    "vcbus.shared.views.pods": "vcbus.core.views.pod_fold",
    # The job status the controller publishes.
    "vcbus.services.job_controller.status": "vcbus.services.job_controller.job_status",
    # How the controller builds a job's pods.
    "vcbus.services.job_controller.pods": "vcbus.services.job_controller.job_pods",
    # The read commands' compact store and reader.
    "vcbus.services.cli.status": "vcbus.services.cli.status_store",
    # Tests follow the tree they test.
    "tests.unit.shared": "tests.unit.core",
    "tests.integration.shared": "tests.integration.core",
    "tests.unit.shared.views.test_status": "tests.unit.core.views.test_live",
    "tests.unit.services.cli.test_status": "tests.unit.services.cli.test_status_store",
}

# Where references are rewritten (tracked files only); the lock and binaries are left alone.
TEXT_SUFFIXES = {
    ".py",
    ".md",
    ".toml",
    ".cfg",
    ".ini",
    ".yaml",
    ".yml",
    ".txt",
    ".json",
    ".sh",
    ".conf",
}
TEXT_NAMES = {"Makefile", "Dockerfile", "run", ".importlinter"}
SKIP = {
    "uv.lock",
    "tools/rename_modules.py",
    # its examples name the old modules on purpose
    "tests/unit/repository/test_rename_modules.py",
}

_WORD = r"[A-Za-z0-9_]"


def _git(*args: str) -> str:
    done = subprocess.run(["git", *args], check=True, capture_output=True, text=True)
    return done.stdout


def _tracked() -> list[str]:
    return [p for p in _git("ls-files", "-z").split("\0") if p]


def _ordered() -> list[tuple[str, str]]:
    """The renames, most specific first."""
    return sorted(MODULES.items(), key=lambda item: -len(item[0]))


def new_module(module: str) -> str:
    """Return ``module``'s new dotted name (itself when no rename covers it)."""
    for old, new in _ordered():
        if module == old or module.startswith(old + "."):
            return new + module[len(old) :]
    return module


def new_path(path: str) -> str:
    """Return a tracked file's new path (itself when no rename covers it)."""
    suffix = ".py" if path.endswith(".py") else ""
    stem = path[: len(path) - len(suffix)]
    for old, new in _ordered():
        before, after = old.replace(".", "/"), new.replace(".", "/")
        if (suffix and stem == before) or stem.startswith(before + "/"):
            return after + stem[len(before) :] + suffix
    return path


def _reference_pattern() -> re.Pattern[str]:
    olds = [old for old, _ in _ordered()]
    forms = [re.escape(o) for o in olds] + [re.escape(o.replace(".", "/")) for o in olds]
    forms.sort(key=len, reverse=True)
    return re.compile(rf"(?<![\w.])({'|'.join(forms)})(?!{_WORD})")


_PATTERN = _reference_pattern()
_FROM_IMPORT = re.compile(
    r"^(?P<head>\s*from (?P<package>\.|[\w.]+) import )(?P<names>\([\w\s,#]*\)|[\w ,]+)$",
    re.MULTILINE,
)
_RELATIVE = re.compile(r"^(\s*from \.)(\w+)( import )", re.MULTILINE)


def _swap(match: re.Match[str]) -> str:
    found = match.group(1)
    if "/" in found:
        return new_module(found.replace("/", ".")).replace(".", "/")
    return new_module(found)


def _leaf_renames(package: str) -> dict[str, str]:
    """Renames of modules directly in ``package`` (old and new dotted) that keep the package."""
    out: dict[str, str] = {}
    for old, new in MODULES.items():
        old_pkg, _, old_leaf = old.rpartition(".")
        new_pkg, _, new_leaf = new.rpartition(".")
        if new_module(old_pkg) == new_module(package) and new_pkg == new_module(old_pkg):
            out[old_leaf] = new_leaf
    return out


def rewrite(text: str, path: str) -> str:
    """Return ``text`` (of the file now at ``path``) with every reference renamed.

    A renamed module imported by name from its package (``from vcbus import shared``,
    ``from . import status``) is imported under its new name as the old one, so the code
    that uses it reads the same.
    """
    text = _PATTERN.sub(_swap, text)
    if not path.endswith(".py"):
        return text
    here = path.rpartition("/")[0].replace("/", ".")
    text = _RELATIVE.sub(
        lambda m: m.group(1) + _leaves(here).get(m.group(2), m.group(2)) + m.group(3), text
    )
    return _FROM_IMPORT.sub(lambda m: _from_import(m, here), text)


def _leaves(package: str) -> dict[str, str]:
    """Old leaf name -> new leaf name of the modules renamed directly in ``package``."""
    return {**_leaf_renames(_old_package(package)), **_leaf_renames(package)}


def _from_import(match: re.Match[str], here: str) -> str:
    package = here if match["package"] == "." else match["package"]
    leaves = _leaves(package)
    if not leaves:
        return match.group(0)

    def one(token: re.Match[str]) -> str:
        name, alias = token["name"], token["alias"]
        if name not in leaves:
            return token.group(0)
        return f"{leaves[name]} as {alias or name}"

    names = re.sub(r"\b(?P<name>\w+)(?: as (?P<alias>\w+))?", one, match["names"])
    return match["head"] + names


def _old_package(package: str) -> str:
    for old, new in _ordered():
        if package == new or package.startswith(new + "."):
            return old + package[len(new) :]
    return package


MAX_LINE = 100
"""ruff's line length (pyproject.toml): a rename that makes a line longer is reported."""


def _long_lines(text: str) -> set[str]:
    return {line.strip() for line in text.splitlines() if len(line) > MAX_LINE}


def _is_text(path: str) -> bool:
    name = path.rpartition("/")[2]
    return path not in SKIP and (Path(name).suffix in TEXT_SUFFIXES or name in TEXT_NAMES)


def _moves(paths: Iterable[str]) -> list[tuple[str, str]]:
    return [(p, new_path(p)) for p in paths if new_path(p) != p]


def _prune(roots: Iterable[str]) -> None:
    """Remove directories an earlier rename left empty (or with only bytecode caches)."""
    for root in roots:
        base = Path(root)
        if not base.is_dir():
            continue
        for directory in [*sorted(base.rglob("*"), key=lambda p: -len(p.parts)), base]:
            if not directory.is_dir():
                continue
            for cache in directory.glob("__pycache__"):
                if cache.is_dir() and not any(cache.glob("*.py")):
                    for f in cache.iterdir():
                        f.unlink()
                    cache.rmdir()
            if not any(directory.iterdir()):
                directory.rmdir()


def main(argv: list[str] | None = None) -> int:
    """Run the renames (or, with ``--check``, report them); return the exit status."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if needed")
    parser.add_argument("--ruff", default=shutil.which("ruff"), help="ruff to sort imports with")
    args = parser.parse_args(argv)
    moves = _moves(_tracked())
    changed: list[str] = []
    for old, new in moves:
        if Path(new).exists():
            print(f"refusing to move {old}: {new} exists", file=sys.stderr)
            return 2
        changed.append(f"move {old} -> {new}")
        if not args.check:
            Path(new).parent.mkdir(parents=True, exist_ok=True)
            _git("mv", old, new)
    if not args.check:
        _prune({old.rpartition("/")[0] for old, _ in moves})
    for source in _tracked():
        path = new_path(source) if args.check else source
        if not _is_text(path) or not Path(source).is_file():
            continue
        before = Path(source).read_text(encoding="utf-8")
        after = rewrite(before, path)
        if after != before:
            changed.append(f"rewrite {path}")
            longer = _long_lines(after) - _long_lines(before)
            if longer and path.endswith(".py"):
                print(f"{path}: over {MAX_LINE} characters now: {sorted(longer)}", file=sys.stderr)
            if not args.check:
                Path(path).write_text(after, encoding="utf-8")
    print("\n".join(changed) if changed else "nothing to rename")
    rewritten = [line.removeprefix("rewrite ") for line in changed if line.startswith("rewrite ")]
    python = [path for path in rewritten if path.endswith(".py")]
    if python and not args.check:
        if args.ruff is None:
            print("ruff not found: run `ruff check --fix --select I .` and `ruff format .`")
        else:
            subprocess.run(
                [args.ruff, "check", "--fix", "--select", "I", "-q", *python], check=False
            )
            subprocess.run([args.ruff, "format", "-q", *python], check=False)
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    sys.exit(main())

"""CI (`.ci/run`) runs the whole gate, `make check`'s steps, and fails when any step fails.

The script runs in a copy of its folder with `make` and `python3` replaced by stubs on PATH:
each stub records its arguments, and `make` exits with the status the test sets per target.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from tests.support.lockfile import ROOT

_MAKE = """#!/usr/bin/env bash
echo "make $*" >> "$CI_CALLS"
for target in "$@"; do
  code_var="FAIL_${target}"
  if [ -n "${!code_var:-}" ]; then exit "${!code_var}"; fi
done
exit 0
"""
_PYTHON = """#!/usr/bin/env bash
echo "python3 $*" >> "$CI_CALLS"
"""


def _run_ci(tmp_path: Path, **failures: int) -> tuple[int, list[str]]:
    (tmp_path / ".ci").mkdir()
    shutil.copy(ROOT / ".ci" / "run", tmp_path / ".ci" / "run")
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    for name, text in (("make", _MAKE), ("python3", _PYTHON)):
        (stubs / name).write_text(text)
        (stubs / name).chmod(stat.S_IRWXU)
    calls = tmp_path / "calls"
    calls.touch()
    env = {
        **os.environ,
        "PATH": f"{stubs}{os.pathsep}{os.environ['PATH']}",
        "CI_CALLS": str(calls),
        **{f"FAIL_{target}": str(code) for target, code in failures.items()},
    }
    done = subprocess.run(
        ["bash", str(tmp_path / ".ci" / "run")],
        env=env,
        capture_output=True,
        check=False,
    )
    return done.returncode, calls.read_text().splitlines()


def test_ci_runs_lint_types_imports_then_the_readme_test_command(tmp_path: Path) -> None:
    code, calls = _run_ci(tmp_path)

    assert code == 0
    assert calls == ["python3 -m venv .venv", "make lint typecheck imports", "make test"]


@pytest.mark.parametrize("target", ["lint", "typecheck", "imports"])
def test_ci_fails_without_running_tests_when_a_gate_step_fails(tmp_path: Path, target: str) -> None:
    code, calls = _run_ci(tmp_path, **{target: 2})

    assert code != 0
    assert "make test" not in calls


def test_ci_fails_when_no_tests_were_collected(tmp_path: Path) -> None:
    code, _ = _run_ci(tmp_path, test=5)

    assert code == 1


def test_ci_fails_with_the_test_status_when_tests_fail(tmp_path: Path) -> None:
    code, _ = _run_ci(tmp_path, test=1)

    assert code == 1

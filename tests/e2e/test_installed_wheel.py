"""The wheel installs and runs: built from this tree's source release (as an installer builds
one, so nothing a ``build/`` folder of the checkout holds gets in), installed into a fresh
venv, ``vcbus up --demo`` run from an empty directory completes every demo job and exits 0.

What is under test is the wheel's own contents (its packages, the package data the services
read at run time: the topic table, the demo jobs, and its ``vcbus`` script), with nothing of
the source tree on the path. Its dependencies are the locked ones already installed in this
test's environment: the fresh venv reaches them through a ``.pth`` line naming that
environment's site-packages (a path on ``sys.path``; its own ``.pth`` files, among them the
editable install of this tree, are not run), so the test needs no network.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from tests.e2e.system import SERVICES
from tests.support import leftovers
from tests.support.processes import ROOT
from vcbus import contracts, services
from vcbus import core as shared

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

PACKAGES = {module.__name__.partition(".")[0] for module in (contracts, services, shared)}
"""The wheel's top-level import packages: the project's, nothing else."""
UV = ROOT / ".uv" / "bin" / "uv"
"""The pinned lock tool of the Makefile; it builds the wheel offline from its cache."""


def _build_wheel(out_dir: Path) -> Path:
    done = subprocess.run(
        [str(UV), "build", "--offline", "--out-dir", str(out_dir), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (wheel,) = out_dir.glob("vcbus-*.whl")
    return wheel


def _fresh_venv(venv: Path, wheel: Path) -> Path:
    """A new venv with the wheel (not its dependencies) installed; its ``python``."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    done = subprocess.run(
        [str(UV), "pip", "install", "--offline", "--no-deps", "--python", str(python), str(wheel)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(site, "locked-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


def _clean_env(venv: Path) -> dict[str, str]:
    """This environment without the project's settings, a Python path or another venv."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("KAFKA_", "VCBUS_", "OTEL_", "PYTHON", "VIRTUAL_ENV"))
    }
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return env


def test_vcbus_up_demo_completes_when_installed_from_the_wheel_into_a_fresh_venv(
    tmp_path: Path,
) -> None:
    wheel = _build_wheel(tmp_path / "dist")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    top_levels = {name.split("/")[0] for name in names if ".dist-info/" not in name}
    assert top_levels == PACKAGES, names
    assert any(name.endswith("/topics.yaml") for name in names), names

    venv = tmp_path / "venv"
    python = _fresh_venv(venv, wheel)
    env = _clean_env(venv)
    empty = tmp_path / "empty"
    empty.mkdir()
    found = subprocess.run(
        [
            str(python),
            "-c",
            "import importlib.util, sys; "
            "print('\\n'.join(importlib.util.find_spec(name).origin for name in sys.argv[1:]))",
            *sorted(PACKAGES),
        ],
        cwd=empty,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert all(Path(origin).is_relative_to(venv) for origin in found), found

    done = leftovers.run_owned(
        [str(venv / "bin" / "vcbus"), "up", "--demo", "--timeout", "200"],
        cwd=empty,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=260,
        check=False,
    )

    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "demo: all jobs completed" in done.stdout, output
    logs = sorted(path.stem for path in (empty / ".vcbus" / "logs").glob("*.log"))
    assert logs == sorted(SERVICES), output
    shutil.rmtree(venv)  # the fresh venv is large; the rest of tmp_path is kept for a look

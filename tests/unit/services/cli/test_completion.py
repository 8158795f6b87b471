"""``vcbus completion bash|zsh`` and ``vcbus --version`` through the entry point; the bash
script is loaded into a real bash and asked what follows."""

from __future__ import annotations

import importlib.metadata
import shutil
import subprocess
from pathlib import Path

import pytest

from vcbus.services.cli import main


def script(capsys: pytest.CaptureFixture[str], shell: str) -> str:
    assert main(["completion", shell]) == 0
    return capsys.readouterr().out


def complete(script_path: Path, *typed: str, cwd: Path | None = None) -> list[str]:
    """What bash offers after ``vcbus`` and ``typed`` (the last word is being typed)."""
    bash = shutil.which("bash")
    assert bash is not None
    words = " ".join(f"'{w}'" for w in ("vcbus", *typed))
    program = (
        f"source {script_path}; COMP_WORDS=({words}); COMP_CWORD={len(typed)}; "
        '_vcbus; printf "%s\\n" "${COMPREPLY[@]}"'
    )
    done = subprocess.run(
        [bash, "-c", program], capture_output=True, text=True, check=True, cwd=cwd
    )
    return [line for line in done.stdout.splitlines() if line]


@pytest.fixture
def bash_script(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> Path:
    path = tmp_path / "vcbus.bash"
    path.write_text(script(capsys, "bash"))
    return path


def test_bash_offers_commands_verbs_kinds_and_options(bash_script: Path) -> None:
    assert complete(bash_script, "jo") == ["job"]
    assert complete(bash_script, "job", "") == ["suspend", "resume", "list", "view", "--help"]
    assert complete(bash_script, "get", "-o", "wide", "pod") == [
        "pod",
        "podgroup",
        "podgroups",
        "pods",
    ]
    assert complete(bash_script, "get", "jobs", "--all") == ["--all-namespaces"]
    assert complete(bash_script, "queue", "d") == ["delete"]


def test_bash_offers_files_where_a_command_takes_one(bash_script: Path, tmp_path: Path) -> None:
    (tmp_path / "job.yaml").write_text("")
    assert complete(bash_script, "submit", "job", cwd=tmp_path) == ["job.yaml"]
    assert complete(bash_script, "get", "job", cwd=tmp_path) == ["job", "jobs"]


def test_zsh_loads_the_same_function_through_bashcompinit(
    capsys: pytest.CaptureFixture[str],
) -> None:
    text = script(capsys, "zsh")
    assert text.startswith("#compdef vcbus\n")
    assert "autoload -U +X bashcompinit && bashcompinit\n" in text
    assert text.endswith(script(capsys, "bash"))


def test_version_names_the_installed_package(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"vcbus {importlib.metadata.version('vcbus')}\n"

"""The module renames (tools/rename_modules.py) rewrite references by module path, once."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def renames() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "rename_modules", ROOT / "tools/rename_modules.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


SAMPLE = """\
from vcbus.shared.views.status import StatusView
from vcbus.shared.views.status_extra import Other
import vcbus.shared.bus.kafka
see vcbus/shared/views/pods.py and vcbus/shared/runtime/topics.yaml
from vcbus.services.job_controller.status import counts_superseded
patch("vcbus.services.cli.status.StatusReader")
not.vcbus.shared.here
"""

EXPECTED = """\
from vcbus.core.views.live import StatusView
from vcbus.core.views.status_extra import Other
import vcbus.core.bus.kafka
see vcbus/core/views/pod_fold.py and vcbus/core/runtime/topics.yaml
from vcbus.services.job_controller.job_status import counts_superseded
patch("vcbus.services.cli.status_store.StatusReader")
not.vcbus.shared.here
"""


def test_references_are_rewritten_by_module_path(renames: ModuleType) -> None:
    assert renames.rewrite(SAMPLE, "docs/x.md") == EXPECTED


def test_a_second_rewrite_changes_nothing(renames: ModuleType) -> None:
    once = renames.rewrite(SAMPLE, "vcbus/core/x.py")
    assert renames.rewrite(once, "vcbus/core/x.py") == once


def test_relative_imports_follow_a_renamed_sibling(renames: ModuleType) -> None:
    text = "from .status import counts_superseded\nfrom .state import JobRecord\n"
    assert renames.rewrite(text, "vcbus/services/job_controller/app.py") == (
        "from .job_status import counts_superseded\nfrom .state import JobRecord\n"
    )
    assert renames.rewrite(text, "vcbus/services/allocator/app.py") == text


def test_a_renamed_module_imported_by_name_keeps_the_name_it_was_used_by(
    renames: ModuleType,
) -> None:
    text = "from vcbus import contracts, shared\nfrom . import status, state\n"
    assert renames.rewrite(text, "vcbus/services/job_controller/x.py") == (
        "from vcbus import contracts, core as shared\nfrom . import job_status as status, state\n"
    )
    parenthesized = "from vcbus.shared.views import (\n    jobs,\n    pods as fold,\n)\n"
    assert renames.rewrite(parenthesized, "tests/x.py") == (
        "from vcbus.core.views import (\n    jobs,\n    pod_fold as fold,\n)\n"
    )


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("vcbus/shared/views/status.py", "vcbus/core/views/live.py"),
        ("vcbus/shared/views/jobs.py", "vcbus/core/views/jobs.py"),
        ("vcbus/shared/runtime/topics.yaml", "vcbus/core/runtime/topics.yaml"),
        ("tests/unit/shared/views/test_status.py", "tests/unit/core/views/test_live.py"),
        ("vcbus/services/cli/status_view.py", "vcbus/services/cli/status_view.py"),
        (".ci/run", ".ci/run"),
        ("vcbus/core/views/live.py", "vcbus/core/views/live.py"),
    ],
)
def test_paths_move_once(renames: ModuleType, old: str, new: str) -> None:
    assert renames.new_path(old) == new
    assert renames.new_path(new) == new

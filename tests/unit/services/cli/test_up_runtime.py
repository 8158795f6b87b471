"""How ``vcbus up --agent``'s node runs its pods: containers where podman works, said."""

from __future__ import annotations

import pytest

from vcbus.services.cli import demo_image
from vcbus.services.cli.up_runtime import Choice, choose


def _never() -> str:
    pytest.fail("podman was asked")


def test_processes_asked_for_ask_nothing_of_podman() -> None:
    said = "agent: pods run as host processes (--runtime process)"
    assert choose("process", demo=True, unavailable=_never, build=_never) == Choice("process", said)


def test_with_podman_working_the_demo_image_is_built_and_pods_run_in_containers() -> None:
    built: list[str] = []

    def build() -> str:
        built.append(demo_image.IMAGE)
        return ""

    choice = choose("auto", demo=True, unavailable=lambda: "", build=build)
    assert (choice.runtime, choice.error, built) == ("podman", "", [demo_image.IMAGE])
    assert choice.said.startswith("agent: pods run in podman containers; the demo's jobs in ")
    assert choose("auto", demo=False, unavailable=lambda: "", build=_never).runtime == "podman"


def test_without_podman_up_says_so_plainly_and_runs_host_processes() -> None:
    choice = choose("auto", demo=True, unavailable=lambda: "podman is not installed", build=_never)
    assert choice == Choice(
        "process",
        "agent: containers are not available here (podman is not installed): "
        "pods run as host processes",
    )
    asked = choose("podman", demo=True, unavailable=lambda: "runc is not installed", build=_never)
    assert asked.error == "vcbus up --runtime podman: runc is not installed"


def test_an_image_that_cannot_be_built_falls_back_to_host_processes() -> None:
    choice = choose("auto", demo=True, unavailable=lambda: "", build=lambda: "podman build: no")
    assert choice.runtime == "process"
    assert f"the demo's image {demo_image.IMAGE} could not be built: podman build: no" in (
        choice.said
    )

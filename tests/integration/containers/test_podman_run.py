"""A container's command line run by the real podman, on an image built here offline.

The image is ``FROM scratch`` with the host's static busybox (no registry is reached); one
image is built per module.
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from vcbus.services.agent.app.podman import podman_problem
from vcbus.services.agent.containers import LABEL_POD_UID, RUNTIME_OPTIONS, run_argv

IMAGE = "localhost/vcbus-test-busybox:1"


@pytest.fixture(scope="module")
def image(tmp_path_factory: pytest.TempPathFactory) -> str:
    problem = podman_problem()
    assert not problem, problem
    context = tmp_path_factory.mktemp("image")
    busybox = shutil.which("busybox")
    assert busybox is not None
    shutil.copy(busybox, context / "busybox")
    (context / "Containerfile").write_text(
        "FROM scratch\nCOPY busybox /bin/busybox\n"
        'ENTRYPOINT ["/bin/busybox"]\nCMD ["echo", "image-cmd"]\n'
    )
    subprocess.run(
        ["podman", *RUNTIME_OPTIONS, "build", "-q", "-t", IMAGE, str(context)],
        check=True,
        capture_output=True,
    )
    return IMAGE


def _run(**kwargs: object) -> subprocess.CompletedProcess[str]:
    argv = run_argv(podman="podman", container="main", restart=0, **kwargs)  # type: ignore[arg-type]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)


_runs = itertools.count()


def _uid() -> str:
    return f"t{os.getpid()}-{next(_runs)}"


def test_command_and_args_over_the_entrypoint_as_kubernetes_does(image: str) -> None:
    assert _run(uid=_uid(), image=image, pull_policy="Never").stdout == "image-cmd\n"
    assert _run(uid=_uid(), image=image, args=["echo", "args"], pull_policy="Never").stdout == (
        "args\n"
    )
    done = _run(
        uid=_uid(),
        image=image,
        command=["/bin/busybox", "sh", "-c"],
        args=['echo "$GREETING from $(pwd)"; exit 3'],
        env={"GREETING": "hello"},
        working_dir="/bin",
        pull_policy="Never",
    )
    assert (done.returncode, done.stdout) == (3, "hello from /bin\n")


def test_memory_limit_kills_the_container_with_sigkill(image: str) -> None:
    uid = _uid()
    argv = run_argv(
        podman="podman",
        uid=uid,
        container="main",
        restart=0,
        image=image,
        command=["/bin/busybox", "sh", "-c"],
        args=["head -c 100000000 /dev/zero | /bin/busybox tail > /dev/null"],
        memory_bytes=32 * 1024 * 1024,
        pull_policy="Never",
    )
    argv.remove("--rm")  # kept to read its state, removed below
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    name = argv[argv.index("--name") + 1]
    try:
        found = subprocess.run(
            [
                "podman",
                *RUNTIME_OPTIONS,
                "ps",
                "-a",
                "-q",
                "--filter",
                f"label={LABEL_POD_UID}={uid}",
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
    finally:
        subprocess.run(
            ["podman", *RUNTIME_OPTIONS, "rm", "-f", name], capture_output=True, check=False
        )
    assert done.returncode == 137
    assert len(found) == 1  # found again by the pod's label


def test_an_image_not_present_with_never_fails_to_start(image: str) -> None:
    done = _run(uid=_uid(), image="localhost/vcbus-absent:0", pull_policy="Never")
    assert done.returncode != 0
    assert "localhost/vcbus-absent" in done.stderr


def test_an_unknown_pull_policy_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="imagePullPolicy 'Sometimes'"):
        run_argv(
            podman="podman", uid="u", container="c", restart=0, image="i", pull_policy="Sometimes"
        )


def test_the_probe_names_a_podman_that_is_not_installed(tmp_path: Path) -> None:
    assert podman_problem(str(tmp_path / "no-podman")).endswith("is not installed")

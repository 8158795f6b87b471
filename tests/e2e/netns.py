"""Hosts for end-to-end tests: network namespaces on a bridge the test makes.

Each host is a namespace ``vch-<tag>-<name>`` with its own loopback and one address on
``10.<a>.<b>.0/24`` (a veth pair: ``vch-<tag>-<i>h`` on the bridge ``vch-<tag>-br``, its
peer ``eth0`` in the namespace); the bridge has ``.254``, so the test itself reaches every
host as a machine on the same network would. ``cut`` takes a host's link down (its cable
pulled); everything is removed when the block ends, the processes left in a namespace
killed first. The names carry the test process's id, so two runs on one machine do not
meet. ``unavailable`` says why this machine cannot make them (not root, no ``ip``), for a
clean skip.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
from collections.abc import Iterator, Sequence

PREFIX = "vch-"
"""Every namespace, bridge and link the tests make starts with it."""


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=20, check=check)


def unavailable() -> str:
    """Why network namespaces cannot be made here; empty when they can."""
    if shutil.which("ip") is None:
        return "no ip command (iproute2)"
    if os.geteuid() != 0:
        return "network namespaces need root"
    probe = f"{PREFIX}probe-{os.getpid()}"
    made = _ip("netns", "add", probe, check=False)
    if made.returncode != 0:
        return f"ip netns add failed: {made.stderr.strip()}"
    _ip("netns", "del", probe, check=False)
    return ""


class Hosts:
    """Hosts by name, each with its address, as network namespaces on a bridge."""

    def __init__(self, names: Sequence[str]) -> None:
        pid = os.getpid()
        self.tag = f"{pid % 0xFFFFF:05x}"
        self.subnet = f"10.{200 + pid % 50}.{(pid // 50) % 250}"
        self.bridge = f"{PREFIX}{self.tag}-br"
        self.names = tuple(names)
        self._made: list[str] = []

    def namespace(self, name: str) -> str:
        """The namespace of host ``name``."""
        return f"{PREFIX}{self.tag}-{name}"

    def address(self, name: str) -> str:
        """The address of host ``name``."""
        return f"{self.subnet}.{self.names.index(name) + 1}"

    @property
    def gateway(self) -> str:
        """The bridge's own address: where the test reaches the hosts from."""
        return f"{self.subnet}.254"

    def wrap(self, name: str) -> list[str]:
        """The command prefix that runs a process on host ``name``."""
        return ["ip", "netns", "exec", self.namespace(name)]

    def _link(self, name: str) -> str:
        return f"{PREFIX}{self.tag}-{self.names.index(name)}h"

    def cut(self, name: str) -> None:
        """Take host ``name``'s link down: it reaches no other host, none reaches it."""
        _ip("link", "set", self._link(name), "down")

    def __enter__(self) -> Hosts:
        try:
            self._make()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _make(self) -> None:
        _ip("link", "add", self.bridge, "type", "bridge")
        self._made.append(self.bridge)
        _ip("addr", "add", f"{self.gateway}/24", "dev", self.bridge)
        _ip("link", "set", self.bridge, "up")
        for name in self.names:
            namespace = self.namespace(name)
            _ip("netns", "add", namespace)
            self._made.append(namespace)
            link, peer = self._link(name), f"{PREFIX}{self.tag}-{self.names.index(name)}n"
            _ip("link", "add", link, "type", "veth", "peer", "name", peer)
            _ip("link", "set", peer, "netns", namespace)
            _ip("link", "set", link, "master", self.bridge)
            _ip("link", "set", link, "up")
            inside = ["netns", "exec", namespace, "ip"]
            _ip(*inside, "link", "set", peer, "name", "eth0")
            _ip(*inside, "addr", "add", f"{self.address(name)}/24", "dev", "eth0")
            _ip(*inside, "link", "set", "eth0", "up")
            _ip(*inside, "link", "set", "lo", "up")

    def close(self) -> None:
        """Kill what still runs in the namespaces, then remove them and the bridge."""
        for made in reversed(self._made):
            if made == self.bridge:
                _ip("link", "del", self.bridge, check=False)
                continue
            pids = _ip("netns", "pids", made, check=False).stdout.split()
            for pid in pids:
                with contextlib.suppress(OSError, ValueError):
                    os.kill(int(pid), signal.SIGKILL)
            _ip("netns", "del", made, check=False)
        for index in range(len(self.names)):  # gone with their peers, but not at once
            _ip("link", "del", f"{PREFIX}{self.tag}-{index}h", check=False)
        self._made.clear()


@contextlib.contextmanager
def hosts(names: Sequence[str]) -> Iterator[Hosts]:
    """Hosts ``names`` for the block."""
    with Hosts(names) as made:
        yield made

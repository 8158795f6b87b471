"""Host ports as a resource: each pod's container ports get host ports no other pod holds.

Pure. Pods on one host share its network, so two pods (of one job or two) must never be
given the same port: the agent allocates one host port per container port a pod needs
(``vcbus.services.agent.plugins.pod_ports``) from its range, and frees them when the pod is
forgotten. The allocation is kept in the agent's state on disk, so a restarted agent hands
out none of the ports its running pods hold.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence


class PortsExhaustedError(ValueError):
    """The range has fewer free ports than a pod needs."""


def parse_range(text: str) -> tuple[int, int]:
    """Read ``LOW-HIGH`` (both included) as the agent's port range.

    Raises:
        ValueError: not two port numbers with LOW <= HIGH.
    """
    low, sep, high = text.partition("-")
    try:
        first, last = int(low), int(high)
    except ValueError:
        raise ValueError(f"port range {text!r} is not LOW-HIGH, like 30000-32767") from None
    if not sep or not 1 <= first <= last <= 65535:
        raise ValueError(f"port range {text!r} must be LOW-HIGH with 1 <= LOW <= HIGH <= 65535")
    return first, last


def allocate(
    wanted: Sequence[int], used: Collection[int], port_range: tuple[int, int], start: int = 0
) -> dict[int, int]:
    """Give each container port of ``wanted`` a free host port of ``port_range``.

    Args:
        wanted: the container ports a pod needs host ports for.
        used: host ports held by other pods.
        port_range: the agent's range, both ends included.
        start: where to begin looking (the agent turns it, so a freed port is not handed
            out again at once, to a process that might still hold it in TIME_WAIT).

    Returns:
        Container port -> host port.

    Raises:
        PortsExhaustedError: too few free ports.
    """
    low, high = port_range
    size = high - low + 1
    taken = set(used)
    out: dict[int, int] = {}
    offset = start % size
    for container_port in wanted:
        for step in range(size):
            port = low + (offset + step) % size
            if port not in taken:
                out[container_port] = port
                taken.add(port)
                offset = (offset + step + 1) % size
                break
        else:
            raise PortsExhaustedError(
                f"no free host port in {low}-{high} for container port {container_port} "
                f"({len(used)} held by other pods)"
            )
    return out

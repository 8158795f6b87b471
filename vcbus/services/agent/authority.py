"""The agent's launch gate: only what admission admitted and the allocator bound runs here.

With a trust file (``vcbus agent --trust``, ``VCBUS_AGENT_TRUST``), the agent keeps only
the admitted jobs admission signed (:meth:`LaunchGate.admit`; any other is refused), takes
a binding only when the allocator signed it (:meth:`LaunchGate.check_binding`) and starts
its pod only from the admitted manifest its binding names by digest
(:meth:`LaunchGate.manifest`). Without one, it checks nothing and runs a job's newest
admitted manifest, as before (logged at start: the node trusts every bus writer).

The signing and the verification are :mod:`vcbus.core.authority`'s.
"""

from __future__ import annotations

from collections.abc import Mapping

from vcbus.contracts.events.bindings import BindingCreated
from vcbus.contracts.events.jobs_admitted import JobAdmitted
from vcbus.contracts.keys import JobKey
from vcbus.contracts.objects.job import Job
from vcbus.core.authority import (
    REASON_SPEC_NOT_ADMITTED,
    LaunchRefusedError,
    Trust,
    check_admitted,
    check_binding,
)

VERSIONS_KEPT = 8
"""How many admitted manifests of one job the gate keeps (by digest, newest last): a pod
bound before an update was read still starts from the manifest it was made from."""


class LaunchGate:
    """The admitted manifests this agent may run, and the check of each binding."""

    def __init__(self, trust: Trust | None) -> None:
        self.trust = trust
        self._versions: dict[JobKey, dict[str, Job]] = {}

    @property
    def enabled(self) -> bool:
        """Whether launches are verified."""
        return self.trust is not None

    def admit(self, event: JobAdmitted) -> None:
        """Keep an admitted job's manifest once its signature verifies.

        Raises:
            LaunchRefusedError: not admission's, or changed since (the record is refused).
        """
        if self.trust is None:
            return
        check_admitted(self.trust, event)
        versions = self._versions.setdefault(event.job, {})
        versions.pop(event.manifest_digest, None)
        versions[event.manifest_digest] = event.manifest
        while len(versions) > VERSIONS_KEPT:
            del versions[next(iter(versions))]

    def check_binding(self, binding: BindingCreated) -> None:
        """Check a binding is the allocator's, unchanged.

        Raises:
            LaunchRefusedError: unsigned or mis-signed.
        """
        if self.trust is not None:
            check_binding(self.trust, binding)

    def knows(self, job: JobKey, digest: str) -> bool:
        """Whether the admitted manifest ``digest`` of ``job`` was read (and verified)."""
        return digest in self._versions.get(job, {})

    def check_spec(self, binding: BindingCreated) -> None:
        """Check a signed binding names a manifest admission signed for its job.

        Raises:
            LaunchRefusedError: ``SpecNotAdmitted``, naming the digests.
        """
        if self.trust is None:
            return
        pod = binding.pod
        if self.knows(pod.job, pod.admitted_digest):
            return
        known = ", ".join(digest[:16] for digest in self._versions.get(pod.job, {})) or "none"
        raise LaunchRefusedError(
            REASON_SPEC_NOT_ADMITTED,
            f"binding of pod {pod.namespace}/{pod.name} (uid {pod.uid}) names spec "
            f"{pod.admitted_digest[:16] or '(none)'} of job {pod.job}, which admission did "
            f"not sign (admitted specs read here: {known})",
        )

    def manifest(self, job: JobKey, digest: str, newest: Mapping[JobKey, Job]) -> Job | None:
        """The manifest to start a pod of ``job`` from: the admitted one its binding named.

        Without trust: the job's newest admitted manifest (``newest``), as read.
        """
        if self.trust is None:
            return newest.get(job)
        return self._versions.get(job, {}).get(digest)


__all__ = ["LaunchGate", "LaunchRefusedError"]

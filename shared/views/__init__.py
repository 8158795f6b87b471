"""The read model: what users see, folded from the status topics. Pure: no I/O.

- :mod:`shared.views.phases`: the final job phases, and the phases shown for what is gone.
- :mod:`shared.views.reason`: :func:`~shared.views.reason.job_reason`, the one rule for why
  a job is where it is (SPEC A8's ranking over ``podgroups.status``,
  ``podgroups.conditions`` and ``jobs.status``), used by ``get``, ``describe``,
  ``submit --wait``, ``up``, the dashboard and ``simulate``'s outcome.
- :mod:`shared.views.jobs`: a job's PodGroup phase as shown (``Deleted`` once it is gone)
  and its pod counts in words.
- :mod:`shared.views.status`: :class:`~shared.views.status.StatusView`, the decoded fold of
  ``vcbus up``'s live view, and its tables.
- :mod:`shared.views.pods`: pods folded from ``pods``, ``bindings`` and ``pods.status``.
- :mod:`shared.views.reservation`: the reservation folded from ``reservations``.
- :mod:`shared.views.events`: a job's records folded into ``describe``'s Events rows.
- :mod:`shared.views.age`: ages as kubectl prints them.
- :mod:`shared.views.table`: the one renderer of the CLI's tables.

Reading the bus (``StatusReader``, ``read_store``) stays in the CLI.
"""

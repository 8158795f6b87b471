"""The read model: what users see, folded from the status topics. Pure: no I/O.

- :mod:`vcbus.core.views.phases`: the final job phases, and the phases shown for what is gone.
- :mod:`vcbus.core.views.reason`: :func:`~vcbus.core.views.reason.job_reason`, the one rule for
  why a job is where it is (docs/design.md#pending-reasons's ranking over ``podgroups.status``,
  ``podgroups.conditions`` and ``jobs.status``), used by ``get``, ``describe``,
  ``submit --wait``, ``up``, the dashboard and ``simulate``'s outcome.
- :mod:`vcbus.core.views.jobs`: :class:`~vcbus.core.views.jobs.JobFold`, the one fold of a job's
  records; a job's PodGroup phase as shown (``Deleted`` once it is gone) and its pod
  counts in words.
- :mod:`vcbus.core.views.pod_fold`: :class:`~vcbus.core.views.pod_fold.PodFold`, the one fold
  of pods from ``pods``, ``bindings`` and ``pods.status`` (by incarnation), and what holds
  each node.
- :mod:`vcbus.core.views.reservation_view`: the reservation folded from ``reservations``.
- :mod:`vcbus.core.views.live`: :class:`~vcbus.core.views.live.StatusView`, ``vcbus up``'s
  live view (the three folds above and the nodes), and its tables.

Who reads them: ``up`` (``StatusView``), the CLI's store (``vcbus/services/cli/status_store.py``:
``get``, ``describe``, ``delete``, ``submit --wait``, the dashboard; it keeps the newest
record per key of the job topics and folds pods and the reservation here) and
``simulate``'s outcome (``JobFold``, ``PodFold``, ``ReservationView``). Each is fed
decoded events by whichever bus it reads.
- :mod:`vcbus.core.views.events`: a job's records folded into ``describe``'s Events rows.
- :mod:`vcbus.core.views.age`: ages as kubectl prints them.
- :mod:`vcbus.core.views.table`: the one renderer of the CLI's tables.
- :mod:`vcbus.core.views.units`: amounts as people read them (cpu in cores, memory in Gi),
  defined once in :mod:`vcbus.core.units`, below the read model, for the scheduler's
  messages too.
- :mod:`vcbus.core.views.charts`: charts as inline SVG (lines over time, a Gantt of jobs), drawn
  by the dashboard and ``simulate --html``.

Reading the bus (``StatusReader``, ``read_store``) stays in the CLI.
"""

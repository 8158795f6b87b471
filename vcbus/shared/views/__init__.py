"""The read model: what users see, folded from the status topics. Pure: no I/O.

- :mod:`vcbus.shared.views.phases`: the final job phases, and the phases shown for what is gone.
- :mod:`vcbus.shared.views.reason`: :func:`~vcbus.shared.views.reason.job_reason`, the one rule for
  why a job is where it is (docs/design.md#pending-reasons's ranking over ``podgroups.status``,
  ``podgroups.conditions`` and ``jobs.status``), used by ``get``, ``describe``,
  ``submit --wait``, ``up``, the dashboard and ``simulate``'s outcome.
- :mod:`vcbus.shared.views.jobs`: :class:`~vcbus.shared.views.jobs.JobFold`, the one fold of a job's
  records; a job's PodGroup phase as shown (``Deleted`` once it is gone) and its pod
  counts in words.
- :mod:`vcbus.shared.views.pods`: :class:`~vcbus.shared.views.pods.PodFold`, the one fold
  of pods from ``pods``, ``bindings`` and ``pods.status`` (by incarnation), and what holds
  each node.
- :mod:`vcbus.shared.views.reservation`: the reservation folded from ``reservations``.
- :mod:`vcbus.shared.views.status`: :class:`~vcbus.shared.views.status.StatusView`, ``vcbus up``'s
  live view (the three folds above and the nodes), and its tables.

Who reads them: ``up`` (``StatusView``), the CLI's store (``vcbus/services/cli/status.py``:
``get``, ``describe``, ``delete``, ``submit --wait``, the dashboard; it keeps the newest
record per key of the job topics and folds pods and the reservation here) and
``simulate``'s outcome (``JobFold``, ``PodFold``, ``ReservationView``). Each is fed
decoded events by whichever bus it reads.
- :mod:`vcbus.shared.views.events`: a job's records folded into ``describe``'s Events rows.
- :mod:`vcbus.shared.views.age`: ages as kubectl prints them.
- :mod:`vcbus.shared.views.table`: the one renderer of the CLI's tables.
- :mod:`vcbus.shared.views.units`: amounts as people read them (cpu in cores, memory in Gi),
  defined once in :mod:`vcbus.shared.units`, below the read model, for the scheduler's
  messages too.
- :mod:`vcbus.shared.views.charts`: charts as inline SVG (lines over time, a Gantt of jobs), drawn
  by the dashboard and ``simulate --html``.

Reading the bus (``StatusReader``, ``read_store``) stays in the CLI.
"""

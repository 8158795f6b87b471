"""job-controller: jobs.admitted, podgroups.status, pods.status → podgroups, pods, jobs.status.

The pure core is :func:`vcbus.services.job_controller.core.decide`; ``app.py`` wires it to the bus.
"""

__all__: list[str] = []

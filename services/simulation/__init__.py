"""``vcbus simulate``'s room: a scenario run through the real services, and its outcome.

- :mod:`~services.simulation.scenario`: the scenario file (full mode) and the timed inputs
  it feeds the system.
- :mod:`~services.simulation.run`: running it, in memory on virtual time or on a broker.
- :mod:`~services.simulation.inprocess`: every service on one bus and one clock.
- :mod:`~services.simulation.outcome`: what the run did, folded on the read model
  (:mod:`shared.views`), with its :mod:`~services.simulation.summary` and its typed format
  and JSON Schema (:mod:`~services.simulation.outcome_format`).
- :mod:`~services.simulation.report`: how an outcome prints (JSON, text).
- :mod:`~services.simulation.cycles`: what each scheduling cycle decided (``--cycles``).
- :mod:`~services.simulation.snapshot`: scheduling cycles alone, on a snapshot scenario.

The command (``services/cli/simulate.py``) parses its arguments and prints.
"""

"""``vcbus simulate``'s room: a scenario run through the real services, and its outcome.

- :mod:`~vcbus.services.simulation.scenario`: the scenario file (full mode) and the timed inputs
  it feeds the system.
- :mod:`~vcbus.services.simulation.run`: running it, in memory on virtual time or on a broker.
- :mod:`~vcbus.services.simulation.inprocess`: every service on one bus and one clock.
- :mod:`~vcbus.services.simulation.outcome`: what the run did, folded on the read model
  (:mod:`vcbus.core.views`), with its :mod:`~vcbus.services.simulation.summary` and its typed
  format and JSON Schema (:mod:`~vcbus.services.simulation.outcome_format`).
- :mod:`~vcbus.services.simulation.report`: how an outcome prints (JSON, text).
- :mod:`~vcbus.services.simulation.cycles`: what each scheduling cycle decided (``--cycles``).
- :mod:`~vcbus.services.simulation.snapshot`: scheduling cycles alone, on a snapshot scenario.

The command (``vcbus/services/cli/simulate.py``) parses its arguments and prints.
"""

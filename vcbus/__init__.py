"""vcbus: Volcano's batch-job lifecycle as asyncio services over Kafka.

``vcbus.contracts`` holds the wire types, ``vcbus.core`` the code every service shares
(bus, runtime, state, scheduling), ``vcbus.services`` the services and the ``vcbus`` command.
"""

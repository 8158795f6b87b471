"""The async shell every service runs in: the delivery loop, reactors, tables, lease, clocks."""

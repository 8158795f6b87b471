"""The bus: one protocol, an in-memory and an aiokafka implementation, codec and routing."""

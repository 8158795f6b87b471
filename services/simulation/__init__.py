"""``vcbus simulate``'s room: a scenario run through the real services, and its outcome."""

"""Per-key state of services, kept in changelog topics."""

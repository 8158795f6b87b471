"""Shared code of vcbus services: bus, runtime, state, tracing, logging, scheduling framework."""

"""The scheduling framework: session, extension points, plugins, actions and statements.

Modules are imported directly (``vcbus.core.scheduling.framework.session``); this package
imports nothing so that the model can use ``framework.status`` without a cycle.
"""

__all__: list[str] = []

"""Display units for the read side: :mod:`vcbus.core.units`, under the read model's name.

The one definition lives in :mod:`vcbus.core.units`, below the read model, so that the
scheduler's messages (which may not import the read model) show amounts the same way.
"""

from vcbus.core.units import show_amount, show_bytes, show_resources, show_used, unit_of

__all__ = ["show_amount", "show_bytes", "show_resources", "show_used", "unit_of"]

import inspect

import vcbus.core.telemetry
from vcbus.core.telemetry import exposition, metrics


def test_public_names_are_exported_when_the_package_is_imported():
    defined = {
        name
        for module in (exposition, metrics)
        for name, value in vars(module).items()
        if not name.startswith("_")
        and (inspect.isfunction(value) or inspect.isclass(value))
        and value.__module__ == module.__name__
    }

    assert defined <= set(vcbus.core.telemetry.__all__)
    assert vcbus.core.telemetry.__all__ == sorted(vcbus.core.telemetry.__all__)
    assert all(hasattr(vcbus.core.telemetry, name) for name in vcbus.core.telemetry.__all__)

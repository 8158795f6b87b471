import inspect

import vcbus.shared.telemetry
from vcbus.shared.telemetry import exposition, metrics


def test_public_names_are_exported_when_the_package_is_imported():
    defined = {
        name
        for module in (exposition, metrics)
        for name, value in vars(module).items()
        if not name.startswith("_")
        and (inspect.isfunction(value) or inspect.isclass(value))
        and value.__module__ == module.__name__
    }

    assert defined <= set(vcbus.shared.telemetry.__all__)
    assert vcbus.shared.telemetry.__all__ == sorted(vcbus.shared.telemetry.__all__)
    assert all(hasattr(vcbus.shared.telemetry, name) for name in vcbus.shared.telemetry.__all__)

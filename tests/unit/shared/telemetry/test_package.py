import inspect

import shared.telemetry
from shared.telemetry import exposition, metrics


def test_public_names_are_exported_when_the_package_is_imported():
    defined = {
        name
        for module in (exposition, metrics)
        for name, value in vars(module).items()
        if not name.startswith("_")
        and (inspect.isfunction(value) or inspect.isclass(value))
        and value.__module__ == module.__name__
    }

    assert defined <= set(shared.telemetry.__all__)
    assert shared.telemetry.__all__ == sorted(shared.telemetry.__all__)
    assert all(hasattr(shared.telemetry, name) for name in shared.telemetry.__all__)

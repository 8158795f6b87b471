import inspect

import pytest

import vcbus.core.logging
import vcbus.core.tracing
from vcbus.core.logging import processors, setup
from vcbus.core.tracing import propagation, spans
from vcbus.core.tracing import setup as tracing_setup


@pytest.mark.parametrize(
    ("package", "modules"),
    [
        (vcbus.core.tracing, [propagation, spans, tracing_setup]),
        (vcbus.core.logging, [processors, setup]),
    ],
    ids=["tracing", "logging"],
)
def test_public_names_are_exported_when_the_package_is_imported(package, modules):
    defined = {
        name
        for module in modules
        for name, value in vars(module).items()
        if not name.startswith("_")
        and (inspect.isfunction(value) or inspect.isclass(value))
        and value.__module__ == module.__name__
    }

    assert defined <= set(package.__all__)
    assert all(hasattr(package, name) for name in package.__all__)

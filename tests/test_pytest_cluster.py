"""The package's own __init__.py: every public name is loaded from the module that holds
it, on first use; any other name is no attribute."""

from __future__ import annotations

import importlib

import pytest

import pytest_cluster


def test_every_public_name_is_the_one_its_module_holds() -> None:
    public = set(pytest_cluster.__all__) - {"__version__"}
    assert public == set(pytest_cluster._PUBLIC)
    for name, module in pytest_cluster._PUBLIC.items():
        assert getattr(pytest_cluster, name) is getattr(importlib.import_module(module), name)


def test_a_name_that_is_not_public_is_no_attribute() -> None:
    with pytest.raises(AttributeError, match=r"^module 'pytest_cluster' has no attribute "
                                             r"'Cluster'$"):
        _ = pytest_cluster.Cluster

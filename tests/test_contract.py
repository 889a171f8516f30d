"""pytest_cluster/contract/__init__.py: the spec's public names, each loaded from its module
when first used."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from pytest_cluster import contract


@pytest.mark.parametrize("name", contract.__all__)
def test_each_public_name_is_its_modules_own(name: str) -> None:
    module = importlib.import_module(f"pytest_cluster.contract.{contract._NAMES[name]}")
    assert getattr(contract, name) is getattr(module, name)


def test_the_public_names_are_the_ones_it_loads() -> None:
    assert sorted(contract.__all__) == sorted(contract._NAMES)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match=r"^module 'pytest_cluster\.contract' has no "
                                             r"attribute 'parse_spek'$"):
        _ = contract.parse_spek


def test_importing_the_package_loads_none_of_its_modules() -> None:
    """Importing one module of contract/ loads no other: the package names them lazily."""
    shown = subprocess.run(
        [sys.executable, "-c", "import sys, pytest_cluster.contract; print(sorted(m for m in "
         "sys.modules if m.startswith('pytest_cluster.contract.')))"],
        capture_output=True, text=True, check=True, timeout=60).stdout.strip()
    assert shown == "[]"

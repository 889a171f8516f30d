"""evidence/__init__.py: the names of record/check.py reached from the package as before
the folders (`from pytest_cluster.evidence import Evidence`), looked up only when asked
for, so that `verify`'s bundle loads nothing of the run's record (nor pytest)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pytest_cluster import evidence
from pytest_cluster.evidence.record import check


@pytest.mark.parametrize("name", ["Evidence", "Place", "Promise"])
def test_the_names_of_check_are_reached_from_the_package(name: str) -> None:
    assert getattr(evidence, name) is getattr(check, name)


def test_another_name_is_no_attribute_of_the_package() -> None:
    with pytest.raises(AttributeError) as caught:
        evidence.Ledger  # noqa: B018 - the lookup is the test
    assert str(caught.value) == "module 'pytest_cluster.evidence' has no attribute 'Ledger'"


def test_the_bundle_loads_nothing_of_the_record_nor_pytest() -> None:
    done = subprocess.run(
        [sys.executable, "-c", "import sys, pytest_cluster.evidence.bundle.verify; "
         "print(sorted(m for m in sys.modules if m.startswith(('pytest_cluster.evidence."
         "record', 'pytest_cluster.evidence.verdict', '_pytest'))))"],
        capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "[]"

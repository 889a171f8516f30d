"""tests/real/: the tests that start real components (network namespaces with an sshd each,
SLURM, shaped links, a storage server). Every test here is `realcomponents` (so CI fails
where one is skipped) and `slow`, whether or not it says so."""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if Path(item.path).resolve().is_relative_to(HERE):
            item.add_marker(pytest.mark.realcomponents)
            item.add_marker(pytest.mark.slow)

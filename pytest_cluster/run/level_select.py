"""The -m selection read over the level ladder (contract/levels.py): while pytest's own -m
chooses among the collected cases, it evaluates the expression with each level's name
under `not` read as that level's own cases; the option keeps what was given (the
evidence's `selection` quotes it)."""

from __future__ import annotations

from collections.abc import Generator

import pytest

from pytest_cluster.contract.levels import ladder_expression
from pytest_cluster.run.stash import SPEC_KEY


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(config: pytest.Config) -> Generator[None, None, None]:
    given = config.option.markexpr
    if config.stash.get(SPEC_KEY, None) is None or not given:
        return (yield)
    config.option.markexpr = ladder_expression(str(given))
    try:
        return (yield)
    finally:
        config.option.markexpr = given

"""sim/round.py: the soak round a process runs, from its environment (1 outside a soak)."""

from __future__ import annotations

import pytest

from pytest_cluster.sim import round as rounds


@pytest.mark.parametrize(("raw", "number"), [("7", 7), ("1", 1), ("0", 1), ("-3", 1),
                                             ("x", 1), ("", 1), (" 2", 1)])
def test_the_round_is_the_environments_positive_number_else_1(
        monkeypatch: pytest.MonkeyPatch, raw: str, number: int) -> None:
    monkeypatch.setenv(rounds.ENV, raw)
    assert rounds.current() == number


def test_outside_a_soak_the_round_is_1(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(rounds.ENV, raising=False)
    assert rounds.current() == 1

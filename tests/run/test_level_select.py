"""-m read over the level ladder: a level named covers the levels below it, a level under
`not` is its own cases; the selection the evidence quotes is the one given."""

from __future__ import annotations

import json

import pytest

from pytest_cluster.contract.declaration import ACCEPTANCE, SANITY, STRESS
from tests.conftest import added_promised
from tests.contract.test_levels import SIM, _ran


def test_not_sanity_is_the_rest_of_the_suite(pytester: pytest.Pytester) -> None:
    """`-m "not sanity"` runs the rest of the suite: the levels split it in two."""
    (pytester.path / "trial.yaml").write_text(SIM)
    rest = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                              "-m", "not sanity")
    assert rest.ret == pytest.ExitCode.OK
    lines = [json.loads(line) for line in (pytester.path / "reports" / "latest" /
                                           "results.jsonl").read_text().splitlines()]
    # what is judged under the torch probe's load: matmul, and the default rules read then
    assert {r["clause"] for r in lines if r["type"] == "result"} == {
        "gpus.matmul.bf16", "gpus.temperature", "gpus.throttle", "gpus.pcie",
        *added_promised(SIM, ACCEPTANCE)}


def test_a_level_under_not_is_its_own_cases(pytester: pytest.Pytester) -> None:
    """A level named covers the levels below it; under `not` it is that level's own
    cases: `not stress` is the default suite, `acceptance and not sanity` the checks
    under load, `sanity and not slow` the sanity checks."""
    (pytester.path / "trial.yaml").write_text(SIM)
    default, _ = _ran(pytester)
    not_stress, verdict = _ran(pytester, "-m", "not stress")
    assert not_stress == default and verdict["levels"] == []  # an expression: no level
    under_load, _ = _ran(pytester, "-m", "acceptance and not sanity")
    assert set(under_load.values()) == {ACCEPTANCE}
    assert set(under_load) == {c for c, lv in default.items() if lv == ACCEPTANCE}
    not_slow, _ = _ran(pytester, "-m", "sanity and not slow")
    assert set(not_slow.values()) == {SANITY}
    only_stress, _ = _ran(pytester, "-m", "stress and not (sanity or acceptance)")
    assert set(only_stress.values()) == {STRESS}


@pytest.mark.parametrize("given", ["not stress", "acceptance and not sanity"])
def test_the_evidence_quotes_the_selection_as_given(pytester: pytest.Pytester,
                                                    given: str) -> None:
    """The expression is read over the ladder while pytest selects, and put back: the
    evidence quotes what was typed, not the ladder's reading of it."""
    (pytester.path / "trial.yaml").write_text(SIM)
    _ran(pytester, "-m", given)
    end = json.loads((pytester.path / "reports" / "latest" / "results.jsonl").read_text()
                     .splitlines()[-1])
    assert end["selection"] == {"-m": given}

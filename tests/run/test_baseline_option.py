"""--cluster-baseline read at configure time (run/baseline_option.py): a directory that
cannot serve as a baseline is a usage error before any test runs, naming what it is."""

from __future__ import annotations

import pytest

SPEC = "cluster: {name: opts, nodes: [n1], launcher: sim}\ngpus: {count: 8}\nsim: {}\n"


@pytest.mark.parametrize(("rounds", "last"), [
    (["round-0001", "round-0012"], "its last round is old/rounds/round-0012"),
    ([], "it holds no round")])
def test_a_soaks_directory_as_a_baseline_is_refused_with_its_last_round(
        pytester: pytest.Pytester, rounds: list[str], last: str) -> None:
    """Before: a soak's directory passed verify and was compared with as one run."""
    (pytester.path / "trial.yaml").write_text(SPEC)
    (pytester.path / "old").mkdir()
    (pytester.path / "old" / "soak.json").write_text("{}")
    for name in rounds:
        (pytester.path / "old" / "rounds" / name).mkdir(parents=True)
    result = pytester.runpytest("--cluster=trial.yaml", "--cluster-baseline=old")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert result.stderr.lines[0] == (
        "ERROR: --cluster-baseline=old: is a soak's directory (it holds soak.json): a "
        "baseline is one run's evidence; compare with one of its rounds "
        f"(--cluster-baseline=SOAK/rounds/round-NNNN); {last}")
    assert not (pytester.path / "reports").exists()

"""Levels: each clause declares one; `-m sanity` runs the checks that load nothing (no
torch measurement, no storage benchmark), stress is opt-in."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_cluster.contract.clauses import CLAUSES
from pytest_cluster.contract.declaration import ACCEPTANCE, LEVELS, SANITY, STRESS
from pytest_cluster.contract.levels import ladder_expression
from pytest_cluster.evidence.plan import NOT_AT_THIS_LEVEL
from tests.conftest import added_promised


def test_every_clause_has_a_level_and_sanity_reads_nothing_that_loads() -> None:
    for declaration in CLAUSES:
        assert declaration.level in LEVELS, declaration.id
        reads = declaration.reads
        if declaration.level == SANITY and reads is not None:
            assert reads.probe in ("host", "gpu", "storage", "nic"), declaration.id
            if reads.probe == "storage":  # statvfs, not the benchmark
                assert reads.part == "capacity", declaration.id
    sanity = {d.id for d in CLAUSES if d.level == SANITY}
    assert {"gpus.count", "gpus.model", "gpus.xid", "gpus.nvlink", "gpus.ecc_uncorrected",
            "host.software", "storage.capacity", "fabric.ports", "fabric.rate"} <= sanity
    assert not sanity & {"gpus.matmul", "gpus.usable_memory", "gpus.throttle",
                         "gpus.temperature", "storage.write", "storage.import_torch",
                         "interconnect.busbw[intra_node]"}


SIM = """\
cluster: {name: lv, nodes: "n[1-3]", launcher: sim}
host: {cpu_cores: ">= 1"}
gpus:
  count: 8
  matmul: {bf16: ">= 700 TFLOPS"}
sim:
  gpus_per_node: 8
"""


def test_sanity_loads_nothing_and_says_what_it_left_out(pytester: pytest.Pytester) -> None:
    (pytester.path / "trial.yaml").write_text(SIM)
    result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                                "-m", "sanity")
    assert result.ret == pytest.ExitCode.OK
    run_dir = (pytester.path / "reports" / "latest").resolve()
    probes = {json.loads(p.read_text())["probe"] for p in (run_dir / "probes").glob(
        "*.call.json")}
    assert probes == {"host", "gpu"}  # no torch measurement
    lines = [json.loads(line) for line in (run_dir / "results.jsonl").read_text()
             .splitlines()]
    ran = {r["clause"] for r in lines if r["type"] == "result"}
    assert "gpus.matmul.bf16" not in ran and {"gpus.count", "host.cpu_cores"} <= ran
    assert lines[-1]["status"] == "partial"
    assert lines[-1]["selection"] == {"-m": "sanity"}


def test_stress_is_opt_in(pytester: pytest.Pytester) -> None:
    (pytester.path / "trial.yaml").write_text(SIM)
    pytester.makepyfile(test_mine="""
        import pytest

        @pytest.mark.stress
        def test_soak(cluster):
            assert cluster.nodes

        def test_plain(cluster):
            assert cluster.nodes
    """)
    default = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                                 "test_mine.py")
    default.assert_outcomes(passed=1, deselected=1)
    chosen = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                                "test_mine.py", "-m", "stress")
    chosen.assert_outcomes(passed=2)  # the ladder: stress covers the levels below it
    only = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                              "test_mine.py", "-m", "stress and not acceptance")
    only.assert_outcomes(passed=1, deselected=1)  # a level under `not`: its own cases
    markers = pytester.runpytest("--markers")
    markers.stdout.fnmatch_lines(["*@pytest.mark.sanity: no load*", "*@pytest.mark.stress:*"])


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


def test_stress_clauses_left_out_are_not_at_this_level_not_out_of_the_contract(
        pytester: pytest.Pytester) -> None:
    """`gpus:` promises the stress clauses by default; a run without -m stress leaves them
    out as not at this level (the end record's not_checked), never as not in contract."""
    (pytester.path / "trial.yaml").write_text(SIM)
    result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.OK
    end = json.loads((pytester.path / "reports" / "latest" / "results.jsonl").read_text()
                     .splitlines()[-1])
    stress = {d.id for d in CLAUSES if d.level == STRESS and d.section == "gpus"}
    assert stress
    rows = {row["clause"]: row["why"] for row in end["not_checked"]}
    assert {name: rows.get(name) for name in stress} == dict.fromkeys(stress,
                                                                     NOT_AT_THIS_LEVEL)
    assert not [name for name in rows if "level stress" in name]
    result.stdout.fnmatch_lines(["not in contract, not tested: *gpus.sdc (level stress: "
                                 "run it with -m stress)*"])


FAULTY = SIM + """\
  faults:
    - {node: n2, gpu: 1, matmul_factor: 0.5}
"""


def _ran(pytester: pytest.Pytester, *args: str) -> tuple[dict[str, str], dict[str, Any]]:
    """Each clause that ran and the level it is of; verdict.json."""
    pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider", *args)
    run_dir = (pytester.path / "reports" / "latest").resolve()
    levels = {d.id: d.level for d in CLAUSES}
    ran = {}
    for line in (run_dir / "results.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record["type"] == "result":
            clause = record["clause"]
            # gpus.matmul.bf16 is of gpus.matmul's declaration
            ran[clause] = next(levels[name] for name in sorted(levels, key=len, reverse=True)
                               if clause == name or clause.startswith(f"{name}."))
    return ran, json.loads((run_dir / "verdict.json").read_text())


def test_levels_are_a_ladder_and_stress_runs_everything_harder(
        pytester: pytest.Pytester) -> None:
    """`-m stress` runs the sanity, acceptance and stress cases: a node with a slow GPU is
    REJECTED at level stress (it was ACCEPTED: only the stress clauses ran); `-m
    acceptance` runs sanity and acceptance; `-m sanity` sanity only."""
    (pytester.path / "trial.yaml").write_text(FAULTY)
    stress, verdict = _ran(pytester, "-m", "stress")
    assert set(stress.values()) == set(LEVELS)
    assert verdict["level"] == STRESS and verdict["levels"] == list(LEVELS)
    assert verdict["verdict"] == "REJECTED" and verdict["status"] == "complete"
    assert {n["node"]: n["verdict"] for n in verdict["nodes"]}["n2"] == "REJECTED"
    acceptance, verdict = _ran(pytester, "-m", "acceptance")
    assert set(acceptance.values()) == {SANITY, ACCEPTANCE}
    assert verdict["levels"] == [SANITY, ACCEPTANCE] and verdict["verdict"] == "REJECTED"
    assert set(acceptance) == set(stress) - {c for c, lv in stress.items() if lv == STRESS}
    default, verdict = _ran(pytester)
    assert default == acceptance and verdict["level"] == ACCEPTANCE
    sanity, verdict = _ran(pytester, "-m", "sanity")
    assert set(sanity.values()) == {SANITY} and verdict["levels"] == [SANITY]
    result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                                "-m", "stress")
    result.stdout.fnmatch_lines(["verdict: REJECTED at level stress (FAIL); level stress "
                                 "covers sanity, acceptance and stress"])


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


def test_the_ladder_expression_reads_a_level_under_not_as_its_own_cases() -> None:
    assert ladder_expression("stress") == "stress"
    assert ladder_expression("not stress") == "not (stress and not acceptance)"
    assert ladder_expression("not (sanity or acceptance)") == \
        "not (sanity or (acceptance and not sanity))"
    assert ladder_expression("not not stress") == "not not stress"  # named: the ladder
    assert ladder_expression('gpu(model="a b") and not acceptance') == \
        'gpu(model="a b") and not (acceptance and not sanity)'
    assert ladder_expression("not (") == "not ("  # pytest says what is wrong

"""The kill switch in a run (--cluster-disable, PYTEST_CLUSTER_DISABLE) on a simulated
cluster whose n2 has a GPU with a pending row remap: disabled, gpus.row_remap's cases are
skipped saying why and until when, never passed, in every view (the consistency oracle),
and the run passes on what it did check; an expired entry is ignored and said; a file that
is not valid stops the run before any check, naming its line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_cluster.cli import main
from pytest_cluster.contract.disable_file import ENV
from tests.conftest import faulted, on, planned
from tests.oracle import check

SPEC = """\
cluster:
  name: tiny
  nodes: n[1-2]
  launcher: sim
gpus:
  count: 2
  model: H100-SXM-80GB
sim:
  gpu_model: H100-SXM-80GB
  gpus_per_node: 2
  faults:
    - {node: n2, gpu: 1, row_remap_pending: true}
"""
REASON = "false positives on driver 550.54 (ticket OPS-1234)"


def _off(pytester: pytest.Pytester, until: str, name: str = "off.yaml") -> Path:
    path = pytester.path / name
    path.write_text(f"disabled:\n  - clause: gpus.row_remap\n    reason: \"{REASON}\"\n"
                    f"    until: {until}\n")
    return path


def _run(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, Path]:
    (pytester.path / "spec.yaml").write_text(SPEC)
    result = pytester.runpytest("--cluster=spec.yaml", "-p", "no:cacheprovider",
                                "--cluster-reports=reports", *args)
    return result, (pytester.path / "reports" / "latest").resolve()


def _lines(run: Path) -> list[dict[str, object]]:
    """results.jsonl's result lines."""
    return [line for line in map(json.loads, (run / "results.jsonl").read_text().splitlines())
            if line["type"] == "result"]


def test_a_disabled_failing_clause_fails_no_node_and_each_of_its_cases_says_disabled(
        pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    remaps = [c for c in planned(pytester, SPEC) if c.startswith("test_gpu_row_remap[")]
    assert faulted(SPEC) == ("n2",) and on(tuple(remaps), "n2")
    failed, _ = _run(pytester)  # without the switch the fault fails n2
    assert failed.ret == pytest.ExitCode.TESTS_FAILED
    result, run = _run(pytester, f"--cluster-disable={_off(pytester, '2099-12-31')}")
    assert result.ret == pytest.ExitCode.OK
    said = f"disabled: {REASON}, until 2099-12-31"
    off = [r for r in _lines(run) if str(r.get("case", "")).rpartition("::")[2] in remaps]
    assert sorted(str(r["case"]).rpartition("::")[2] for r in off) == sorted(remaps)
    assert {(r["outcome"], r["disabled"], r["disabled_until"]) for r in off} == {
        ("skipped", "gpus.row_remap", "2099-12-31")}
    assert all(said in str(r["message"]) for r in off)
    verdict = json.loads((run / "verdict.json").read_text())
    assert (verdict["verdict"], verdict["outcome"]) == ("ACCEPTED", "PASS")
    assert verdict["disabled"] == [{"clause": "gpus.row_remap", "reason": REASON,
                                    "until": "2099-12-31", "cases": len(remaps)}]
    for node in verdict["nodes"]:
        mine = len(on(tuple(remaps), node["node"]))
        assert node["checks_disabled"] == mine
        assert node["checks_passed"] == node["checks_ran"] - mine  # never counted passed
        assert node["reason"].endswith(f"; {mine} disabled (--cluster-disable)")
    out = result.stdout.str()
    assert (f"disabled (--cluster-disable): gpus.row_remap until 2099-12-31: {REASON} "
            f"({len(remaps)} case(s) skipped, none passed)") in out
    found = check(run, out)
    assert found == [], "\n".join(found)
    assert main(["gate", str(run), "--exit-status", "0"]) == 0
    assert capsys.readouterr().out.rstrip().endswith(
        "(1 clause(s) disabled: gpus.row_remap until 2099-12-31)")


def test_an_expired_entry_is_ignored_and_said_and_its_clause_runs(
        pytester: pytest.Pytester) -> None:
    result, run = _run(pytester, f"--cluster-disable={_off(pytester, '2020-01-01')}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    out = result.stdout.str()
    warned = [line for line in out.splitlines() if "disable entry" in line]
    assert warned == [f"warning: the disable entry of gpus.row_remap expired (until "
                      f"2020-01-01: {REASON}): ignored, the clause ran"]
    verdict = json.loads((run / "verdict.json").read_text())
    assert "disabled" not in verdict
    assert verdict["disabled_expired"] == [{"clause": "gpus.row_remap", "reason": REASON,
                                            "until": "2020-01-01"}]
    rejected = {n["node"]: n["failed_clauses"] for n in verdict["nodes"]
                if n["verdict"] == "REJECTED"}
    assert rejected == {"n2": ["gpus.row_remap"]}
    assert not any("disabled" in r for r in _lines(run))
    assert check(run, out) == []


def test_a_disable_file_that_is_not_valid_stops_the_run_before_any_check(
        pytester: pytest.Pytester) -> None:
    bad = _off(pytester, "31.12.2099")
    result, _ = _run(pytester, f"--cluster-disable={bad}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert (f"--cluster-disable: {bad}:4: disabled[0].until: expected a date "
            "(2026-12-31: through that day, UTC)") in result.stderr.str()
    assert "got '31.12.2099'" in result.stderr.str()
    assert not (pytester.path / "reports").exists()  # nothing made, nothing ran


def test_the_environment_names_the_file_and_the_option_wins_over_it(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, str(_off(pytester, "2099-12-31")))
    result, run = _run(pytester)
    assert result.ret == pytest.ExitCode.OK
    assert [e["clause"] for e in json.loads((run / "verdict.json").read_text())["disabled"]] \
        == ["gpus.row_remap"]
    bad = _off(pytester, "never", "bad.yaml")
    result, _ = _run(pytester, f"--cluster-disable={bad}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"{bad}:4: disabled[0].until" in result.stderr.str()
    monkeypatch.setenv(ENV, "")
    result, _ = _run(pytester)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"{ENV}=: expected the path of a disable file" in result.stderr.str()


def test_pytest_xdist_workers_skip_what_the_controller_disabled(
        pytester: pytest.Pytester) -> None:
    result, run = _run(pytester, f"--cluster-disable={_off(pytester, '2099-12-31')}",
                       "-n", "1")
    assert result.ret == pytest.ExitCode.OK
    off = [r for r in _lines(run) if r.get("disabled")]
    assert off and {r["outcome"] for r in off} == {"skipped"}
    assert check(run, result.stdout.str()) == []

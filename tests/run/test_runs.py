"""pytester: what a run leaves behind - one directory per run, nothing from runs that run
nothing, an end record saying what was covered, INCOMPLETE where it was not, a per-node
verdict, JUnit names that do not depend on the working directory."""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from pytest_cluster.evidence.bundle.verify import verify
from pytest_cluster.evidence.verdict.faults import KINDS
from tests.conftest import on, on_no_node, planned

SPEC = """\
cluster: {{name: small, nodes: "n[1-3]", launcher: sim}}
gpus:
  count: 2
  ecc_corrected: "<= 1000"
sim:
  gpus_per_node: 2
  faults: [{faults}]
"""
NODES = ("n1", "n2", "n3")


def cases(pytester: pytest.Pytester) -> tuple[str, ...]:
    """SPEC's cases as its run collects them: what these tests of a run's mechanics count
    (a clause more or less changes them, never the tests)."""
    return planned(pytester, SPEC.format(faults=""))


def per_node(pytester: pytest.Pytester, node: str = "n1") -> int:
    """How many of SPEC's cases are about `node` (its own and its GPUs')."""
    return len(on(cases(pytester), node))


def cluster_checks(pytester: pytest.Pytester) -> int:
    """How many of SPEC's cases are about no one node ("the same on every node")."""
    return len(on_no_node(cases(pytester), NODES))


def run(pytester: pytest.Pytester, *args: str, faults: str = "") -> pytest.RunResult:
    (pytester.path / "trial.yaml").write_text(SPEC.format(faults=faults), encoding="utf-8")
    return pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider", *args)


def run_dirs(pytester: pytest.Pytester) -> list[Path]:
    root = pytester.path / "reports"
    return sorted(p for p in root.iterdir() if p.name != "latest") if root.exists() else []


def lines(run_dir: Path) -> list[dict[str, Any]]:
    text = (run_dir / "results.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


def suite(run_dir: Path) -> ET.Element:
    root = ET.parse(run_dir / "junit.xml").getroot()
    found = root if root.tag == "testsuite" else root.find("testsuite")
    assert found is not None
    return found


def suite_props(run_dir: Path) -> dict[str, str]:
    props = suite(run_dir).find("properties")
    assert props is not None
    return {p.get("name", ""): p.get("value", "") for p in props}


@pytest.mark.slow
def test_each_run_keeps_its_own_evidence(pytester: pytest.Pytester) -> None:
    run(pytester).assert_outcomes(passed=len(cases(pytester)))
    first, = run_dirs(pytester)
    saved = {p.name: p.read_bytes() for p in first.iterdir() if p.is_file()}
    assert set(saved) == {"report.html", "junit.xml", "results.jsonl", "verdict.json",
                          "inventory.json", "manifest.intoto.json"}
    verdict = verify(first)  # sealed over every file, as the run left them
    assert verdict.ok and verdict.checked == len(list(first.rglob("*"))) - 2  # probes/, itself
    run(pytester, "-k", "n2").assert_outcomes(passed=per_node(pytester, "n2"))
    older, newer = run_dirs(pytester)
    assert older == first
    assert {p.name: p.read_bytes() for p in first.iterdir() if p.is_file()} == saved
    assert (first / "probes").is_dir()
    assert os.readlink(pytester.path / "reports" / "latest") == newer.name
    assert newer.name.endswith("Z-small") or newer.name.endswith("Z-small-2")


@pytest.mark.parametrize("args", [("--collect-only",), ("--fixtures",), ("-k", "nothing"),
                                  ("--setup-plan",), ("--markers",)])
def test_runs_that_run_nothing_write_nothing(pytester: pytest.Pytester,
                                             args: tuple[str, ...]) -> None:
    run(pytester).assert_outcomes(passed=len(cases(pytester)))
    before = run_dirs(pytester)
    latest = os.readlink(pytester.path / "reports" / "latest")
    run(pytester, *args)
    assert run_dirs(pytester) == before
    assert os.readlink(pytester.path / "reports" / "latest") == latest


def test_a_selected_run_says_what_it_left_out(pytester: pytest.Pytester) -> None:
    mine, every = per_node(pytester), len(cases(pytester))
    result = run(pytester, "-k", "n1")
    result.assert_outcomes(passed=mine)
    result.stdout.fnmatch_lines([
        f"*cluster small: {mine} of {every} contract check(s) ran, 0 failed; "
        "nodes covered: n1 (1 of 3)*",
        f"INCOMPLETE: {mine} of {every} contract checks ran (the selection left the "
        "others out)",
        f"selection: -k n1; {every - mine} check(s) deselected",
        "verdict: INCOMPLETE at level acceptance (ERROR: not every node was judged; none is "
        "drained for it); level acceptance covers sanity and acceptance",
        "nodes: 1 ACCEPTED, 0 REJECTED, 0 UNREACHABLE, 2 NOT CHECKED",
        f"  NOT CHECKED n2: none of its {mine} checks ran: deselected",
        "deselected: gpus.count (2 of 3), gpus.ecc_corrected (4 of 6), *, gpus.same_driver "
        "(1 of 1), *",
    ])
    run_dir, = run_dirs(pytester)
    end = lines(run_dir)[-1]
    assert end["type"] == "end"
    assert end["status"] == "partial"
    assert (end["checks_ran"], end["checks_planned"], end["deselected"]) == (
        mine, every, every - mine)
    assert end["selection"] == {"-k": "n1"}
    assert end["nodes_covered"] == ["n1"]
    assert {"clause": "gpus.count", "why": "deselected", "cases": 2, "of": 3} in \
        end["not_checked"]
    assert {"clause": "gpus.power_limit", "why": "not in contract"} in end["not_checked"]
    props = suite_props(run_dir)
    assert props["status"] == "partial"
    assert props["INCOMPLETE"] == (f"INCOMPLETE: {mine} of {every} contract checks ran "
                                   "(the selection left the others out)")
    assert props["nodes_accepted"] == "n1"
    assert props["nodes_not_checked"] == "n2,n3"
    html = (run_dir / "report.html").read_text(encoding="utf-8")
    assert "INCOMPLETE: " in html
    assert f"{mine} Passed" in html  # pytest-html still counts the rows it leaves out
    assert "<summary>gpus.count: 1 passed</summary>" in html  # listed, collapsed
    assert "pytest-cluster: passed lists" not in html  # written where their place was
    verdict = json.loads((run_dir / "verdict.json").read_text(encoding="utf-8"))
    assert [n["verdict"] for n in verdict["nodes"]] == ["ACCEPTED", "NOT CHECKED",
                                                       "NOT CHECKED"]


INTERRUPT_AFTER_3 = """  # a plugin: a conftest here would not see the packaged suite
count = 0

def pytest_runtest_teardown(item):
    global count
    count += 1
    if count == 3:
        raise KeyboardInterrupt
"""


def interrupted_run(pytester: pytest.Pytester, interrupter: str) -> pytest.RunResult:
    """SPEC run with the plugin `interrupter` (its source), which presses Ctrl-C."""
    pytester.makepyfile(interrupter=interrupter)
    pytester.syspathinsert()
    (pytester.path / "trial.yaml").write_text(SPEC.format(faults=""), encoding="utf-8")
    result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider", "-p",
                                "interrupter", no_reraise_ctrlc=True)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    return result


def test_an_interrupted_run_says_so_and_every_case_has_a_line(
        pytester: pytest.Pytester) -> None:
    every = len(cases(pytester))
    result = interrupted_run(pytester, INTERRUPT_AFTER_3)
    result.stdout.fnmatch_lines([f"INCOMPLETE: 3 of {every} contract checks ran "
                                 "(interrupted)"])
    run_dir, = run_dirs(pytester)
    records = lines(run_dir)
    results = [r for r in records if r["type"] == "result"]
    assert len(results) == every  # every collected case has a line
    assert [r["outcome"] for r in results].count("not_run") == every - 3
    assert records[-1]["status"] == "interrupted"
    assert records[-1]["counts"] == {"passed": 3, "failed": 0, "error": 0, "skipped": 0,
                                     "not_run": every - 3}
    assert {"clause": "gpus.ecc_corrected", "why": "not reached", "cases": 6, "of": 6} in \
        records[-1]["not_checked"]
    assert suite_props(run_dir)["status"] == "interrupted"
    html = (run_dir / "report.html").read_text(encoding="utf-8")
    assert f"INCOMPLETE: 3 of {every} contract checks ran (interrupted)" in html
    assert "small: INCOMPLETE - " in html


def test_an_unreachable_node_is_one_line_and_the_others_are_judged(
        pytester: pytest.Pytester) -> None:
    every, n2_cases, same = len(cases(pytester)), per_node(pytester, "n2"), \
        cluster_checks(pytester)
    result = run(pytester, faults="{node: n2, down: true}")
    # the "same on every node" checks are not established without n2: cluster failures
    result.assert_outcomes(passed=every - n2_cases - same, failed=n2_cases + same)
    reason = ("n2: gpu probe unreachable: simulated: the node does not answer (sim fault at "
              "spec line 7)")
    result.stdout.fnmatch_lines([
        "nodes: 2 ACCEPTED, 0 REJECTED, 1 UNREACHABLE, 0 NOT CHECKED",
        f"  UNREACHABLE n2: [SIMULATED] {reason}; PC-NODE-UNREACHABLE (provider-hardware): "
        f"{KINDS['unreachable'].fault.action}",
        "to drain them in SLURM (printed, never run):",
        f"  # SIMULATED, not a real node: scontrol update NodeName=n2 State=DRAIN "
        f"'Reason=PC-NODE-UNREACHABLE pytest-cluster unreachable: [SIMULATED] {reason}'",
    ])
    assert result.stdout.str().count("UNREACHABLE n2") == 1
    run_dir, = run_dirs(pytester)
    verdict = json.loads((run_dir / "verdict.json").read_text(encoding="utf-8"))
    n2 = verdict["nodes"][1]
    assert (n2["node"], n2["verdict"], n2["reason"]) == ("n2", "UNREACHABLE",
                                                         f"[SIMULATED] {reason}")
    assert len(n2["failures"]) == n2_cases
    # the fault its drain reason starts with: its no answer's
    assert (n2["code"], n2["actor"]) == ("PC-NODE-UNREACHABLE", "provider-hardware")
    assert {f["message"].split(": cannot measure")[0].split(" gpu")[0]
            for f in n2["failures"]} >= {"n2"} or all(
        reason in f["message"] for f in n2["failures"])
    assert verdict["drain"] == [f"# SIMULATED, not a real node: scontrol update NodeName=n2 "
                                f"State=DRAIN 'Reason=PC-NODE-UNREACHABLE pytest-cluster "
                                f"unreachable: "
                                f"[SIMULATED] {reason}'"]


def test_with_every_node_down_every_case_has_a_line_and_nothing_passes(
        pytester: pytest.Pytester) -> None:
    """No node answers: the per-node cases fail as unreachable, and the cluster checks
    ("the same on every node") fail as not established - none crashes, none passes."""
    every, checks = len(cases(pytester)), cluster_checks(pytester)
    down = ", ".join(f"{{node: {node}, down: true}}" for node in NODES)
    result = run(pytester, faults=down)
    result.assert_outcomes(failed=every)
    run_dir, = run_dirs(pytester)
    results = [r for r in lines(run_dir) if r["type"] == "result"]
    assert len(results) == every and {r["outcome"] for r in results} == {"failed"}
    same = {r["case"].split("::")[1]: r for r in results if r["node"] == "all"}
    assert len(same) == checks and {r["error_kind"] for r in same.values()} == {"not_all_nodes"}
    assert same["test_software_same_on_all_nodes[kernel]"]["message"] == (
        "Failed: [SIMULATED] kernel: no node answered; 3 of 3 node(s) did not answer (n1, "
        "n2, n3), so the same kernel on every node is not established (first: n1: host "
        "probe unreachable: simulated: the node does not answer (sim fault at spec line 7))")
    assert same["test_software_same_on_all_nodes[kernel]"]["measured"] == "no node answered"
    assert "INTERNALERROR" not in result.stdout.str()


@pytest.mark.slow
def test_not_in_contract_is_said_under_xdist(pytester: pytest.Pytester) -> None:
    (pytester.path / "trial.yaml").write_text(SPEC.format(faults=""), encoding="utf-8")
    result = pytester.runpytest_subprocess("--cluster=trial.yaml", "-p", "no:cacheprovider",
                                           "--tx", "2*popen", "--dist", "load")  # on 2 CPUs too
    result.assert_outcomes(passed=len(cases(pytester)))
    result.stdout.fnmatch_lines(["not in contract, not tested: fabric, gpus.d2h, *gpus.matmul, *"])
    assert "NotSet" not in result.stdout.str()
    end = lines(run_dirs(pytester)[0])[-1]
    assert end["status"] == "complete"
    assert {"clause": "gpus.matmul", "why": "not in contract"} in end["not_checked"]

"""Every failure's fault: a clause's as declared, an error kind's or a derived case's from
evidence/verdict/faults.py; every code unique, and none changing its meaning
(tests/contract/fault_codes.txt pins them)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pytest

from pytest_cluster.contract.clauses import CLAUSES, declared
from pytest_cluster.contract.declaration import Actor, Fault
from pytest_cluster.contract.extensions import added_clauses
from pytest_cluster.evidence.record.derived_cases import TESTS
from pytest_cluster.evidence.verdict import blame
from pytest_cluster.evidence.verdict.faults import (
    DERIVED,
    KINDS,
    THE_CLAUSES,
    declaration_of,
    every_fault,
    fault_of,
    fault_properties,
    section_of,
)
from pytest_cluster.launchers.result import ErrorKind

PINNED = Path(__file__).resolve().parents[2] / "contract" / "fault_codes.txt"


def test_every_error_kind_has_a_fault_of_its_own_or_its_clauses() -> None:
    groups = (blame.NO_ANSWER, blame.CONTROLLER_SIDE, blame.TOOL_ERROR, blame.NOT_MEASURED,
              blame.NO_CULPRIT, blame.NOT_ESTABLISHED, blame.RAS_BLAMED)
    known = {kind.value for kind in ErrorKind} | {kind for group in groups for kind in group}
    assert known - THE_CLAUSES <= set(KINDS), sorted(known - THE_CLAUSES - set(KINDS))
    assert not THE_CLAUSES & set(KINDS)
    variants = {name.partition("[")[0] for name in KINDS}
    assert variants <= known, sorted(variants - known)  # no fault of a kind nobody writes


def test_every_derived_family_has_a_fault() -> None:
    assert {name.partition("[")[0] for name in DERIVED} == set(TESTS)


def ours() -> list[tuple[str, Fault]]:
    """Every fault we declare (not those of extensions other tests loaded)."""
    theirs = {d.id for d in added_clauses()}
    return [(name, fault) for name, fault in every_fault() if name not in theirs]


def test_every_code_is_unique() -> None:
    codes = [fault.code for _, fault in ours()]
    assert len(codes) == len(set(codes)), sorted({c for c in codes if codes.count(c) > 1})
    assert len(ours()) == len([d for d in CLAUSES if d.is_clause and d.id not in
                               {a.id for a in added_clauses()}]) + len(KINDS) + len(DERIVED)


def pin_problems(pinned: str, declared_now: Iterable[tuple[str, Fault]]) -> list[str]:
    """What differs between the pinned codes (the file's text) and the faults declared now:
    a code removed, a code whose clause or actor changed, a code not pinned yet."""
    was: dict[str, tuple[str, str]] = {}
    for line in pinned.splitlines():
        if line.strip() and not line.startswith("#"):
            code, name, actor = line.split()
            was[code] = (name, actor)
    now = {fault.code: (name, fault.actor.value) for name, fault in declared_now}
    found = [f"{code} was removed (it meant {name}, {actor}): a code never goes away; "
             "declare it again" for code, (name, actor) in was.items() if code not in now]
    found += [f"{code} now means {now[code][0]} ({now[code][1]}), was {name} ({actor}): a "
              "code never changes its meaning; give the new meaning a new code"
              for code, (name, actor) in was.items() if code in now and now[code] != was[code]]
    found += [f"{code} is new: add the line '{code} {name} {actor}' to "
              "tests/contract/fault_codes.txt" for code, (name, actor) in now.items()
              if code not in was]
    return found


def test_no_code_changes_its_meaning() -> None:
    problems = pin_problems(PINNED.read_text(encoding="utf-8"), ours())
    assert not problems, "\n".join(problems)


def test_a_code_changed_removed_or_new_is_named() -> None:
    fault = Fault("PC-GPU-ROWREMAP", "reset it", Actor.PROVIDER_HARDWARE)
    pinned = "# a comment\nPC-GPU-ROWREMAP gpus.row_remap provider-hardware\n"
    assert pin_problems(pinned, [("gpus.row_remap", fault)]) == []
    [moved] = pin_problems(pinned, [("gpus.xid", fault)])
    assert moved.startswith("PC-GPU-ROWREMAP now means gpus.xid (provider-hardware), was "
                            "gpus.row_remap")
    other = Fault("PC-GPU-ROWREMAP", "reset it", Actor.PROVIDER_NETWORK)
    assert "now means gpus.row_remap (provider-network)" in pin_problems(
        pinned, [("gpus.row_remap", other)])[0]
    [removed] = pin_problems(pinned, [])
    assert removed.startswith("PC-GPU-ROWREMAP was removed (it meant gpus.row_remap")
    new = Fault("PC-GPU-NEW", "reseat it", Actor.PROVIDER_HARDWARE)
    assert pin_problems(pinned, [("gpus.row_remap", fault), ("gpus.new", new)]) == [
        "PC-GPU-NEW is new: add the line 'PC-GPU-NEW gpus.new provider-hardware' to "
        "tests/contract/fault_codes.txt"]


def test_a_clauses_failure_has_its_declared_fault_members_and_instances_too() -> None:
    software = declared("host.software").fault
    assert fault_of("host.software.torch", {"outcome": "failed"}) == ("host.software",
                                                                        software)
    assert declaration_of("storage[/data].write") is declared("storage.write")
    assert fault_of("interconnect.busbw[inter_node]", {})[1].code == "PC-NET-BUSBW"  # type: ignore[index]
    assert fault_of("my.own", {}) is None  # a test of your own declares none
    # a node's own failure of the clause without a number is still the clause's
    assert fault_of("gpus.row_remap", {"error_kind": "bad_output"})[1].code == (  # type: ignore[index]
        "PC-GPU-ROWREMAP")


@pytest.mark.parametrize(("clause", "record", "code"), [
    ("gpus.row_remap", {"error_kind": "unreachable"}, "PC-NODE-UNREACHABLE"),
    # the host probe, the first thing asked, timed out: the node did not answer
    ("host.cpu_cores", {"error_kind": "timeout", "probe": "host"}, "PC-NODE-UNREACHABLE"),
    ("storage.write", {"error_kind": "timeout", "probe": "storage"}, "PC-STORAGE-WRITE"),
    ("gpus.count", {"error_kind": "tool_fault"}, "PC-TOOL-FAULT"),
    ("interconnect.busbw[node_network]", {"error_kind": "undecided"}, "PC-CLUSTER-UNDECIDED"),
    ("storage.checkpoint.keeps_up", {"error_kind": "undecided"}, "PC-STORAGE-UNDECIDED"),
    ("baseline.performance[storage.write]", {"error_kind": "undecided"},
     "PC-STORAGE-UNDECIDED"),
    ("baseline.performance[gpus.matmul.bf16]", {}, "PC-BASELINE-PERF"),
    ("baseline.performance[fabric.rail_busbw]", {}, "PC-BASELINE-PERF-RAIL"),
    ("baseline.hardware", {}, "PC-BASELINE-HARDWARE"),
    ("baseline.performance[storage.read]", {"error_kind": "not_comparable"},
     "PC-BASELINE-NOT-COMPARABLE"),
])
def test_a_failure_that_is_no_clauses_has_its_own_fault(clause: str, record: dict[str, str],
                                                          code: str) -> None:
    found = fault_of(clause, record)
    assert found is not None and found[1].code == code


def test_the_properties_are_code_action_actor_said_once() -> None:
    props = fault_properties("gpus.row_remap", {"outcome": "failed"})
    fault = declared("gpus.row_remap").fault
    assert fault is not None
    assert props == [("code", "PC-GPU-ROWREMAP"), ("action", fault.action),
                     ("actor", "provider-hardware")]
    assert fault_properties("gpus.row_remap", {"code": "PC-X"}) == []
    assert fault_properties("my.own", {}) == []


def test_the_section_of_a_derived_case_is_its_compared_clauses() -> None:
    assert section_of("baseline.performance[gpus.matmul.bf16]") == "gpus"
    assert section_of("storage[/data].write") == "storage"
    assert section_of("interconnect.busbw[inter_node]") == "interconnect"


EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def test_a_faulty_run_says_each_failures_fault_in_every_view(
        pytester: pytest.Pytester) -> None:
    """examples/sim-h100-faulty.yaml: each failed case's line and JUnit case say its code,
    action and actor (its clause's); verdict.json each rejected node's codes and first
    failure's fault; its drain line starts with that code; the metrics label it."""
    import json
    import xml.etree.ElementTree as ET

    (pytester.path / "trial.yaml").write_text((EXAMPLES / "sim-h100-faulty.yaml").read_text())
    # in a process of its own: an inline run would import (and then drop) the modules
    # this test process has not imported yet
    pytester.runpytest_subprocess("--cluster=trial.yaml", "-p", "no:cacheprovider",
                                  "--cluster-reports=reports", "--cluster-metrics=m.prom",
                                  "--junitxml=junit.xml")
    run = (pytester.path / "reports" / "latest").resolve()
    lines = [json.loads(line) for line in
             (run / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    failed = [r for r in lines if r.get("type") == "result" and r["outcome"] == "failed"]
    assert failed
    for record in failed:
        fault = declaration_of(record["clause"]).fault  # type: ignore[union-attr]
        assert fault is not None
        assert (record["code"], record["action"], record["actor"]) == (
            fault.code, fault.action, fault.actor.value), record["case"]
    assert not any("code" in r for r in lines if r.get("outcome") == "passed")
    verdict = json.loads((run / "verdict.json").read_text(encoding="utf-8"))
    rejected = [n for n in verdict["nodes"] if n["verdict"] == "REJECTED"]
    assert rejected
    for node, drain in zip(rejected, verdict["drain"], strict=True):
        mine = [r for r in failed if r["node"] == node["node"]]
        assert node["code"] == mine[0]["code"] and node["actor"] == mine[0]["actor"]
        assert node["codes"] == list(dict.fromkeys(r["code"] for r in mine))
        assert f"'Reason={node['code']} pytest-cluster rejected: " in drain
    # a GPU with a pending row remap: reset it, RMA it if a remap failed
    assert "PC-GPU-ROWREMAP" in next(n for n in rejected if n["node"] == "sim-gpu-03")["codes"]
    junit = {(tc.get("name"), p.get("name")): p.get("value")
             for tc in ET.parse(pytester.path / "junit.xml").iter("testcase")
             for p in tc.iter("property")}
    for record in failed:
        name = record["nodeid"].rpartition("::")[2]
        assert junit[(name, "code")] == record["code"]
        assert junit[(name, "actor")] == record["actor"]
    metrics = (pytester.path / "m.prom").read_text(encoding="utf-8")
    for node in rejected:
        assert (f'pytest_cluster_node_fault{{cluster="sim-h100-faulty",code="{node["code"]}",'
                f'first="true",level="acceptance",node="{node["node"]}"}} 1.0') in metrics

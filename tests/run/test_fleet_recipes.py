"""The provider's fleet recipes (issue 50) run as a provider runs them, on the richest
example, examples/trial-sim.yaml (GPUs, fabric, interconnect; its sim faults reject two
nodes): the kill switch (--cluster-disable and PYTEST_CLUSTER_DISABLE, then the gate),
`pytest-cluster check` of the contract and of a disable file, the fault codes of every
failure and the drain lines that start with them (`gate --drain` of a simulated run drains
nothing, saying so), a verdict's age (--cluster-valid-for; a stale verdict is the gate's
ERROR), and an RMA accepted against the baseline (--cluster-baseline-accept). Every run is
checked with the consistency oracle. The runs are shared by the module (each a process of
its own, as a provider starts it); what a test expects is derived from a run without the
recipe, never counted by hand."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from pytest_cluster.contract import load_spec
from pytest_cluster.contract.disable_file import ENV
from pytest_cluster.evidence.baseline.replacements import OPTION
from pytest_cluster.units import utc
from tests.conftest import faulted
from tests.oracle import check

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "trial-sim.yaml"
TEXT = EXAMPLE.read_text(encoding="utf-8")
#: The clause the kill switch turns off: one of gpu-002's failing clauses (its port down).
SWITCHED = "fabric.ports"
REASON = "mlx5 port flaps on firmware 28.39 (ticket NET-77)"
UNTIL, EXPIRED = "2099-12-31", "2020-01-01"
ACTORS = {"provider-hardware", "provider-network", "storage", "buyer-spec", "tool"}
HOUR, DAY = 3600.0, 86400.0
SIMULATED_DRAIN = "pytest-cluster not drained: a simulated cluster's nodes are no SLURM nodes"


@dataclass(frozen=True)
class Run:
    """One `pytest --cluster=...` run: its exit, its output and its evidence."""

    status: int
    out: str
    dir: Path
    metrics: Path

    def results(self) -> list[dict[str, Any]]:
        return [r for r in map(json.loads, (self.dir / "results.jsonl").read_text(
            encoding="utf-8").splitlines()) if r.get("type") == "result"]

    def verdict(self) -> dict[str, Any]:
        return dict(json.loads((self.dir / "verdict.json").read_text(encoding="utf-8")))

    def nodes(self) -> dict[str, dict[str, Any]]:
        return {str(n["node"]): n for n in self.verdict()["nodes"]}

    def consistent(self) -> None:
        found = check(self.dir, self.out, self.metrics)
        assert found == [], "\n".join(found)


def _env(**more: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"PYTEST_ADDOPTS", ENV}}
    return {**env, **more}


def _pytest(where: Path, name: str, *args: str, spec: str = "trial.yaml",
            env: dict[str, str] | None = None) -> Run:
    done = subprocess.run([sys.executable, "-m", "pytest", f"--cluster={spec}",
                           "-p", "no:cacheprovider", f"--cluster-reports={name}",
                           f"--cluster-metrics={name}.prom", *args],
                          cwd=where, capture_output=True, text=True, check=False,
                          env=env or _env(), timeout=600)
    latest = where / name / "latest"
    assert latest.is_dir(), done.stdout[-3000:] + done.stderr[-3000:]
    return Run(done.returncode, done.stdout, latest.resolve(), where / f"{name}.prom")


def _gate(run: Path, status: int, *args: str,
          env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest_cluster.cli", "gate", str(run),
                           f"--exit-status={status}", *args], capture_output=True,
                          text=True, check=False, env=env or _env(), timeout=120)


def _check(*args: str, where: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest_cluster.cli", "check", *args],
                          cwd=where, capture_output=True, text=True, check=False,
                          env=_env(), timeout=120)


@pytest.fixture(scope="module")
def where(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The provider's folder: the example as trial.yaml."""
    folder = tmp_path_factory.mktemp("fleet")
    (folder / "trial.yaml").write_text(TEXT, encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def plain(where: Path) -> Run:
    """The example run as it is, its verdict holding 2 h: the run each recipe is compared
    with (and the RMA's baseline)."""
    return _pytest(where, "plain", "--cluster-valid-for=2h")


def _expired_clause(plain: Run) -> str:
    """A clause (not a sub-clause) that failed without the switch, other than the switched
    one: its expired entry must leave it running, and failing, as before."""
    return next(str(c) for n in plain.verdict()["nodes"] if n["verdict"] == "REJECTED"
                for c in n["failed_clauses"] if c != SWITCHED and "[" not in c)


@pytest.fixture(scope="module")
def off(where: Path, plain: Run) -> Path:
    """The disable file: the switched clause with its reason until a future date, and an
    expired entry."""
    path = where / "off.yaml"
    path.write_text(f"disabled:\n  - clause: {SWITCHED}\n    reason: \"{REASON}\"\n"
                    f"    until: {UNTIL}\n  - clause: {_expired_clause(plain)}\n"
                    f"    reason: driver bug fixed in 550.90\n    until: {EXPIRED}\n",
                    encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def switched(where: Path, off: Path) -> Run:
    return _pytest(where, "switched", f"--cluster-disable={off}")


def _cases(run: Run, clause: str) -> dict[str, dict[str, Any]]:
    return {str(r["nodeid"]): r for r in run.results() if r.get("clause") == clause}


def _first_codes(run: Run) -> dict[str, str]:
    """Each node's first failure's code, in the order results.jsonl has them."""
    found: dict[str, str] = {}
    for r in run.results():
        if r["outcome"] in ("failed", "error") and r.get("node") not in (None, "all"):
            found.setdefault(str(r["node"]), str(r.get("code")))
    return found


def test_the_example_rejects_two_nodes_with_a_code_action_and_actor_for_each_failure(
        plain: Run) -> None:
    assert plain.status == pytest.ExitCode.TESTS_FAILED
    rejected = {n for n, v in plain.nodes().items() if v["verdict"] == "REJECTED"}
    assert rejected == set(faulted(TEXT)) and len(rejected) == 2
    failed = [r for r in plain.results() if r["outcome"] in ("failed", "error")]
    assert failed
    for r in failed:
        assert str(r.get("code", "")).startswith("PC-"), r["nodeid"]
        assert r.get("action") and r.get("actor") in ACTORS, r["nodeid"]
    assert any(SWITCHED in v["failed_clauses"] and len(v["failed_clauses"]) > 1
               for v in plain.nodes().values())  # the switched clause is not all it fails
    plain.consistent()


def test_valid_for_sets_valid_until_after_made_at(plain: Run) -> None:
    verdict = plain.verdict()
    made, until = (datetime.fromisoformat(verdict[k].replace("Z", "+00:00"))
                   for k in ("made_at", "valid_until"))
    assert until - made == timedelta(hours=2)


def test_the_kill_switch_skips_its_clause_everywhere_and_the_gate_fails_the_rest(
        plain: Run, switched: Run, off: Path) -> None:
    said = f"disabled: {REASON}, until {UNTIL}"
    before, after = _cases(plain, SWITCHED), _cases(switched, SWITCHED)
    assert before and set(after) == set(before)
    assert {(r["outcome"], r.get("disabled"), r.get("disabled_until"))
            for r in after.values()} == {("skipped", SWITCHED, UNTIL)}
    assert all(said in str(r["message"]) for r in after.values())
    junit = {tc.get("name"): tc for tc in ET.parse(switched.dir / "junit.xml").iter("testcase")}
    for nodeid in after:
        skipped = junit[nodeid.rpartition("::")[2]].find("skipped")
        assert skipped is not None and said in str(skipped.get("message")), nodeid
    verdict = switched.verdict()
    assert verdict["disabled"] == [{"clause": SWITCHED, "reason": REASON, "until": UNTIL,
                                    "cases": len(before)}]
    # the expired entry: ignored and said, its clause ran as without the switch
    expired = _expired_clause(plain)
    assert [e["clause"] for e in verdict["disabled_expired"]] == [expired]
    assert f"warning: the disable entry of {expired} expired (until {EXPIRED}" in switched.out
    assert {k: r["outcome"] for k, r in _cases(switched, expired).items()} == {
        k: r["outcome"] for k, r in _cases(plain, expired).items()}
    # each node fails for what it failed but the switched clause
    was = plain.nodes()
    for name, node in switched.nodes().items():
        rest = [c for c in was[name]["failed_clauses"] if c != SWITCHED]
        assert node["failed_clauses"] == rest, name
        assert node["verdict"] == ("REJECTED" if rest else "ACCEPTED"), name
    rejected = sorted(n for n, v in switched.nodes().items() if v["verdict"] == "REJECTED")
    assert rejected == sorted(faulted(TEXT))  # gpu-002 still, for its interconnect
    switched.consistent()
    gate = _gate(switched.dir, switched.status)
    assert gate.returncode == 1, gate.stdout + gate.stderr
    codes = _first_codes(switched)
    fails = [line for line in gate.stdout.splitlines() if line.startswith("pytest-cluster FAIL ")]
    assert [line.split()[2].rstrip(":") for line in fails] == rejected
    for line, name in zip(fails, rejected, strict=True):  # each with its first failure's code
        assert f"; {codes[name]} (" in line, line
        assert codes[name] == switched.nodes()[name]["code"]


def test_the_environment_names_the_disable_file_as_the_option_does(
        where: Path, off: Path, switched: Run) -> None:
    by_env = _pytest(where, "by-env", env=_env(**{ENV: str(off)}))
    assert by_env.status == switched.status
    assert by_env.verdict()["disabled"] == switched.verdict()["disabled"]
    assert by_env.verdict()["disabled_expired"] == switched.verdict()["disabled_expired"]
    assert {k for k, r in _cases(by_env, SWITCHED).items() if r["outcome"] == "skipped"} == \
        set(_cases(switched, SWITCHED))
    by_env.consistent()


def test_check_validates_the_example_and_its_disable_file_and_names_a_typo_at_its_line(
        where: Path, off: Path) -> None:
    done = _check("trial.yaml", "--disable", str(off), where=where)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[0].startswith("trial.yaml: valid: ")
    typo = where / "typo.yaml"
    text = off.read_text(encoding="utf-8").replace(SWITCHED, "fabric.prots")
    typo.write_text(text, encoding="utf-8")
    line = 1 + text.splitlines().index("  - clause: fabric.prots")
    done = _check("trial.yaml", "--disable", str(typo), where=where)
    assert done.returncode == 4
    assert f"{typo}:{line}: disabled[0].clause: no clause 'fabric.prots'" in done.stdout


@dataclass(frozen=True)
class FakeSlurm:
    """An environment whose PATH has an scontrol and an sinfo that record each call in
    `folder`."""

    env: dict[str, str]
    folder: Path

    def called(self) -> list[str]:
        return sorted(path.name for path in self.folder.glob("*.calls"))


@pytest.fixture
def fake_slurm(tmp_path: Path) -> FakeSlurm:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("scontrol", "sinfo"):
        fake = bin_dir / name
        fake.write_text(f'#!/bin/sh\necho "$*" >>{tmp_path}/{name}.calls\n')
        fake.chmod(0o755)
    return FakeSlurm(_env(PATH=f"{bin_dir}:{os.environ['PATH']}"), tmp_path)


def test_the_drain_lines_start_with_each_nodes_code_and_a_simulated_gate_drains_nothing(
        plain: Run, fake_slurm: FakeSlurm) -> None:
    codes = _first_codes(plain)
    rejected = sorted(n for n, v in plain.nodes().items() if v["verdict"] == "REJECTED")
    drain = plain.verdict()["drain"]
    assert len(drain) == len(rejected)
    for line, node in zip(drain, rejected, strict=True):
        assert line.startswith("# SIMULATED, not a real node: ")
        assert f"NodeName={node} State=DRAIN 'Reason={codes[node]} pytest-cluster rejected: " \
            in line
        assert line in plain.out  # the terminal prints what verdict.json keeps
    gate = _gate(plain.dir, plain.status, "--drain", env=fake_slurm.env)
    assert gate.returncode == 1, gate.stdout + gate.stderr
    assert gate.stdout.splitlines()[-1] == SIMULATED_DRAIN
    for node in rejected:
        assert f"pytest-cluster FAIL {node}: rejected: " in gate.stdout
    assert fake_slurm.called() == []


def _aged(plain: Run, where: Path, made_ago: float, holds: float) -> Path:
    """A copy of the plain run's verdict.json made `made_ago` seconds ago, holding `holds`
    seconds after."""
    verdict = plain.verdict()
    made = time.time() - made_ago
    verdict.update(made_at=utc(made), valid_until=utc(made + holds))
    where.mkdir()
    (where / "verdict.json").write_text(json.dumps(verdict), encoding="utf-8")
    return where


def test_a_stale_verdict_is_an_error_that_drains_nothing(
        plain: Run, tmp_path: Path, fake_slurm: FakeSlurm) -> None:
    stale = _aged(plain, tmp_path / "stale", 3 * DAY, 2 * HOUR)
    gate = _gate(stale, plain.status, "--drain", env=fake_slurm.env)
    assert gate.returncode == 2, gate.stdout + gate.stderr
    assert gate.stdout.startswith("pytest-cluster ERROR: the verdict is stale: made at ")
    assert "FAIL" not in gate.stdout and SIMULATED_DRAIN not in gate.stdout
    # made 90 min ago, holding 2 h: a FAIL, unless --max-age asks for a younger one
    young = _aged(plain, tmp_path / "young", 1.5 * HOUR, 2 * HOUR)
    assert _gate(young, plain.status).returncode == 1
    gate = _gate(young, plain.status, "--max-age", "1h", "--drain", env=fake_slurm.env)
    assert gate.returncode == 2, gate.stdout + gate.stderr
    assert gate.stdout.startswith("pytest-cluster ERROR: the verdict is stale: made at ")
    assert "more than --max-age" in gate.stdout
    assert fake_slurm.called() == []


def _hardware(run: Run, node: str) -> dict[str, Any]:
    [line] = [r for r in run.results()
              if r.get("clause") == "baseline.hardware" and r.get("node") == node]
    return line


def _gpu_serial(run: Path, node: str, index: int) -> str:
    inventory = json.loads((run / "inventory.json").read_text(encoding="utf-8"))
    [gpu] = [g for g in inventory["nodes"][node]["gpus"] if g["index"] == index]
    return str(gpu["serial"])


def test_a_gpu_replaced_under_rma_is_accepted_against_the_example_s_baseline(
        where: Path, plain: Run) -> None:
    """A healthy node's GPU 2 replaced since the plain run (the baseline): its hardware
    case fails naming the new serial; accepted by it, it passes with the replacement
    recorded, and the node is judged as before."""
    spec = load_spec(EXAMPLE)
    node = next(n for n in spec.cluster.nodes if n not in faulted(TEXT))
    (where / "rma.yaml").write_text(TEXT.replace(
        "  faults:\n", f"  faults:\n    - {{node: {node}, gpu: 2, replaced: true}}\n", 1),
        encoding="utf-8")
    base = f"--cluster-baseline={plain.dir}"
    refused = _pytest(where, "rma-refused", base, spec="rma.yaml")
    old, new = _gpu_serial(plain.dir, node, 2), _gpu_serial(refused.dir, node, 2)
    assert old != new
    line = _hardware(refused, node)
    assert line["outcome"] == "failed" and f"gpu2 swapped: serial {old}" in line["message"]
    assert line["message"].endswith(f"accepted with {OPTION}={new}")
    assert refused.nodes()[node]["verdict"] == "REJECTED"
    refused.consistent()

    accepted = _pytest(where, "rma-accepted", base, f"{OPTION}={new}", spec="rma.yaml")
    line = _hardware(accepted, node)
    assert line["outcome"] == "passed"
    assert line["accepted_replacements"] == [
        {"part": "gpu2", "old": old, "new": new, "accepted": new}]
    assert f"accepted replacement: gpu2 {old} -> {new} ({OPTION})" in line["measured"]
    assert [(e["serial"], e["seen"]) for e in accepted.verdict()["baseline_accepted"]] == [
        (new, [{"node": node, "part": "gpu2", "old": old, "new": new}])]
    assert {n: v["verdict"] for n, v in accepted.nodes().items()} == {
        n: v["verdict"] for n, v in plain.nodes().items()}
    accepted.consistent()

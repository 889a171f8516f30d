"""--cluster-baseline: this run against an accepted one. The comparisons (figures, nodes,
hardware) as pure functions, then whole runs: a GPU swapped and a link slowed in the sim
are both named, a tampered baseline is a usage error, the spec's tolerance decides."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any, cast

import pytest
from jsonschema import Draft202012Validator

from pytest_cluster import cli
from pytest_cluster.contract.sections.storage import BASES
from pytest_cluster.evidence.baseline.accepted import (
    NOT_CHECKED,
    UNSIGNED,
    VERIFIED,
    load,
    signature_said,
)
from pytest_cluster.evidence.bundle.manifest import MANIFEST, seal
from pytest_cluster.evidence.record.end import verdict_schema
from pytest_cluster.evidence.sinks.results import ResultLine, read_results
from tests.evidence.bundle.test_bundle import ed25519_key


def figure(measured: float, scale: float, unit: str, comparison: str = ">=",
           **extra: Any) -> ResultLine:
    return cast("ResultLine", {
        "case": "acceptance/test_gpus.py::test_gpu_matmul[gpu-003-gpu6-bf16]",
        "clause": "gpus.matmul.bf16", "node": "gpu-003", "gpu": 6, "measured": measured,
        "measured_base": measured * scale, "unit": unit, "comparison": comparison, **extra})


SPEC = """\
cluster: {{name: base, nodes: "n[1-4]", launcher: sim}}
gpus:
  count: 8
  matmul: {{bf16: ">= 700 TFLOPS"}}
interconnect:
  intra_node: {{kind: nvlink, rate: 450 GB/s}}
  inter_node: {{kind: infiniband, nics_per_node: 8, rate_per_nic: 400 Gb/s}}
  payloads: [1 GiB]
  node_counts: [2, 4]
  busbw: ">= 10%"
  ranks_per_node: 8
  backend: nccl
{baseline}sim:
  gpus_per_node: 8
{faults}"""
CHANGED = """\
  faults:
    - {node: n3, gpu: 6, replaced: true}
    - {node: n2, link_factor: 0.5}
"""


def _run(pytester: pytest.Pytester, reports: str, *args: str, faults: str = "",
         baseline: str = "") -> pytest.RunResult:
    (pytester.path / "trial.yaml").write_text(SPEC.format(faults=faults, baseline=baseline))
    return pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                              f"--cluster-reports={reports}", *args)


@pytest.mark.slow
def test_a_swapped_gpu_and_a_slowed_link_are_both_named(pytester: pytest.Pytester) -> None:
    accepted = _run(pytester, "accepted")
    assert accepted.ret == pytest.ExitCode.OK
    base = (pytester.path / "accepted" / "latest").resolve()
    same = _run(pytester, "same", f"--cluster-baseline={base}")
    assert same.ret == pytest.ExitCode.OK, same.stdout.str()[-3000:]
    kept = read_results(pytester.path / "same" / "latest" / "results.jsonl").results
    derived = [r for r in kept if r["clause"].startswith("baseline.")]
    assert {r["clause"].split("[")[0] for r in derived} == {
        "baseline.nodes", "baseline.hardware", "baseline.performance"}
    assert "baseline.performance[gpus.matmul.bf16]" in {r["clause"] for r in derived}
    assert all(r["outcome"] == "passed" for r in derived)
    end = read_results(pytester.path / "same" / "latest" / "results.jsonl").end
    assert end is not None and end["baseline"]["failed"] == 0
    # the contract's checks are counted as without a baseline; its cases apart
    assert end["checks_ran"] == end["checks_planned"] == read_results(
        base / "results.jsonl").end["checks_ran"]  # type: ignore[index]
    assert end["baseline"]["cases"] == len(derived)
    assert "baseline: compared with" in same.stdout.str()
    now = _run(pytester, "now", f"--cluster-baseline={base}", faults=CHANGED)
    assert now.ret == pytest.ExitCode.TESTS_FAILED
    failed = {r["nodeid"]: r["message"] for r in read_results(
        pytester.path / "now" / "latest" / "results.jsonl").results
        if r["outcome"] == "failed" and r["clause"].startswith("baseline.")}
    swapped = failed.pop("pytest_cluster/baseline.py::test_same_hardware[n3]")
    assert "gpu6 swapped: serial 1654" in swapped and swapped.endswith(
        f"({load(base).label}); parts replaced on purpose (an RMA) are accepted with "
        f"--cluster-baseline-accept={swapped.split('now serial ')[1].split(' ')[0]}")
    slowed = failed.pop("pytest_cluster/baseline.py::test_same_hardware[n2]")
    assert "HCA mlx5_0 rate port 1 400 Gb/sec (4X NDR) at baseline, now port 1 200 Gb/sec" \
        in slowed
    assert failed, "the busbw over n2's link is slower than at baseline"
    for nodeid, message in failed.items():
        assert nodeid.startswith("pytest_cluster/baseline.py::test_not_worse[")
        assert "interconnect.busbw" in message and "% below baseline" in message
    report = (pytester.path / "now" / "latest" / "report.html").read_text()
    assert "<h2>Against the baseline</h2>" in report and "gpu6 swapped: serial" in report
    assert load(base).manifest_sha256 in report
    junit = (pytester.path / "now" / "latest" / "junit.xml").read_text()
    assert 'classname="pytest_cluster.baseline" name="test_same_hardware[n3]"' in junit
    # the spec's tolerance decides: at 60 %, a link at half its rate is within it
    lenient = _run(pytester, "lenient", f"--cluster-baseline={base}", faults=CHANGED,
                   baseline="baseline: {tolerance: 60%}\n")
    results = read_results(pytester.path / "lenient" / "latest" / "results.jsonl").results
    assert not [r for r in results if r["clause"].startswith("baseline.performance")
                and r["outcome"] == "failed"]
    assert lenient.ret == pytest.ExitCode.TESTS_FAILED  # the hardware still changed


@pytest.mark.slow
def test_a_node_paired_with_a_slower_one_is_not_blamed_for_it(
        pytester: pytest.Pytester) -> None:
    """n2's network at 90 %, above the search's bar: the first round pairs it with n1,
    both reach the bar at n2's pace, 10 % below the baseline. Neither is singled out:
    baseline.performance[interconnect.busbw[node_network]] is undecided for both (n1 was
    rejected for its partner, and drained), n1 NOT CHECKED (n2 is rejected for its HCA's
    rate, baseline.hardware); n3 and n4, paired together, pass. A node the
    search names slow (n2 at 5 %, below the bar: its figure with a known-good partner is
    its own) is rejected, and n1, then cleared with a known-good partner, passes."""
    selected = ("-k", "node_network")
    assert _run(pytester, "accepted", *selected).ret == pytest.ExitCode.OK
    base = (pytester.path / "accepted" / "latest").resolve()

    def judged(factor: float) -> tuple[dict[str, str], dict[str, ResultLine]]:
        faults = f"  faults:\n    - {{node: n2, link_factor: {factor}}}\n"
        _run(pytester, f"x{factor}", f"--cluster-baseline={base}", *selected,
             faults=faults)
        run_dir = pytester.path / f"x{factor}" / "latest"
        verdict = json.loads((run_dir / "verdict.json").read_text())
        compared_ = {str(r["node"]): r for r in read_results(run_dir / "results.jsonl")
                     .results if r["clause"] ==
                     "baseline.performance[interconnect.busbw[node_network]]"}
        return {n["node"]: n["verdict"] for n in verdict["nodes"]}, compared_

    verdicts, cases = judged(0.9)  # n2 is rejected for its HCA's rate (baseline.hardware)
    assert verdicts == {"n1": "NOT CHECKED", "n2": "REJECTED", "n3": "ACCEPTED",
                        "n4": "ACCEPTED"}
    for node in ("n1", "n2"):
        assert cases[node]["outcome"] == "failed"
        assert cases[node]["error_kind"] == "undecided", cases[node]
    assert "measured with n2, not known good then" in cases["n1"]["message"]
    verdicts, cases = judged(0.05)
    assert verdicts == {"n1": "ACCEPTED", "n2": "REJECTED", "n3": "ACCEPTED",
                        "n4": "ACCEPTED"}
    assert cases["n1"]["outcome"] == "passed" and cases["n2"]["outcome"] == "failed"
    assert "error_kind" not in cases["n2"]


BURST = """\
cluster: {{name: dispute, nodes: "n[1-2]", launcher: sim}}
storage:
  - path: /shared
    shared: true
    checkpoint: {{size_per_gpu: 64 MiB, write: "{write}"}}
gpus: {{count: 8}}
sim:
  gpus_per_node: 8
  faults: {faults}
"""


@pytest.mark.slow
def test_a_bound_edited_to_another_basis_is_compared_on_one(pytester: pytest.Pytester) -> None:
    """Accepted at '>= 2 GB/s per GPU', run at '>= 10 GB/s' (the cluster's total) with a
    node at half its rate: the write case compares the totals (the burst waits on its
    slowest node: half the rate; it said +708 % on the per-GPU figure and passed), and
    names no node to drain."""
    (pytester.path / "trial.yaml").write_text(BURST.format(write=">= 2 GB/s per GPU",
                                                           faults="[]"))
    assert pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                              "--cluster-reports=accepted").ret == pytest.ExitCode.OK
    base = (pytester.path / "accepted" / "latest").resolve()
    (pytester.path / "trial.yaml").write_text(BURST.format(
        write=">= 10 GB/s", faults="[{node: n2, storage_factor: 0.5}]"))
    pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                       "--cluster-reports=now", f"--cluster-baseline={base}")
    run_dir = pytester.path / "now" / "latest"
    [line] = [r for r in read_results(run_dir / "results.jsonl").results
              if r["clause"] == "baseline.performance[storage[/shared].checkpoint.write]"]
    assert line["outcome"] == "failed", line
    change = line["change_pct"]
    assert change is not None and -55 < change < -45, line["measured"]
    assert f"{BASES['gpu']} at baseline x 16 GPU(s)" in line["message"]
    verdict = json.loads((run_dir / "verdict.json").read_text())
    assert not [f for f in verdict["cluster_checks_failed"] if f["clause"] == line["clause"]
                and f.get("culprits")]


@pytest.mark.slow
def test_a_run_of_one_node_passes_against_a_baseline_of_all(pytester: pytest.Pytester) -> None:
    """`--cluster-node=n1` against an accepted run of n1-n4: baseline.nodes passes, naming
    the three left out by the selection, and the gate says PASS (it said FAIL: 3 missing
    since the baseline, verdict REJECTED)."""
    assert _run(pytester, "accepted").ret == pytest.ExitCode.OK
    base = (pytester.path / "accepted" / "latest").resolve()
    one = _run(pytester, "one", f"--cluster-baseline={base}", "--cluster-node=n1")
    assert one.ret == pytest.ExitCode.OK, one.stdout.str()[-3000:]
    run_dir = pytester.path / "one" / "latest"
    [nodes] = [r for r in read_results(run_dir / "results.jsonl").results
               if r["clause"] == "baseline.nodes"]
    assert nodes["outcome"] == "passed"
    assert nodes["measured"] == ("1 node(s), 4 at baseline; 3 left out by the node "
                                 "selection: n2, n3, n4")
    verdict = json.loads((run_dir / "verdict.json").read_text())
    assert verdict["verdict"] == "ACCEPTED", verdict
    assert cli.main(["gate", str(run_dir), "--exit-status", str(int(one.ret))]) == 0


@pytest.mark.slow
def test_a_selection_of_some_nodes_judges_no_other_by_the_baseline(
        pytester: pytest.Pytester) -> None:
    """`-k n1` against an accepted run of n1-n4: the baseline compares n1 alone, so n2-n4,
    none of whose checks ran, stay NOT CHECKED and the run INCOMPLETE, as without a
    baseline (a passed baseline.hardware case made each of them ACCEPTED, and the gate
    said PASS)."""
    assert _run(pytester, "accepted").ret == pytest.ExitCode.OK
    base = (pytester.path / "accepted" / "latest").resolve()
    some = _run(pytester, "some", f"--cluster-baseline={base}", "-k", "n1")
    verdict = json.loads((pytester.path / "some" / "latest" / "verdict.json").read_text())
    assert {n["node"]: n["verdict"] for n in verdict["nodes"]} == {
        "n1": "ACCEPTED", "n2": "NOT CHECKED", "n3": "NOT CHECKED", "n4": "NOT CHECKED"}
    assert (verdict["verdict"], verdict["outcome"]) == ("INCOMPLETE", "ERROR"), some.ret
    hardware = [r["node"] for r in read_results(pytester.path / "some" / "latest"
                                                / "results.jsonl").results
                if r["clause"] == "baseline.hardware"]
    assert hardware == ["n1"]


@pytest.mark.slow
def test_a_baseline_that_fails_verify_is_a_usage_error(pytester: pytest.Pytester) -> None:
    assert _run(pytester, "accepted").ret == pytest.ExitCode.OK
    base = (pytester.path / "accepted" / "latest").resolve()
    with (base / "results.jsonl").open("a") as out:
        out.write("\n")
    result = _run(pytester, "now", f"--cluster-baseline={base}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--cluster-baseline={base}: it fails pytest-cluster "
                                 "verify*CHANGED: results.jsonl*"])
    assert not (pytester.path / "now").exists()
    result = _run(pytester, "now", f"--cluster-baseline={pytester.path / 'nowhere'}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert not (pytester.path / "now").exists()


def _reseal(run_dir: Path) -> None:
    """A forger's bundle: files changed, the manifest made again over them (unsigned)."""
    (run_dir / MANIFEST).unlink()
    seal(run_dir, {}, ())


@pytest.mark.slow
def test_a_baseline_that_verifies_but_holds_odd_values_never_crashes_the_run(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _run(pytester, "accepted").ret == pytest.ExitCode.OK
    base = (pytester.path / "accepted" / "latest").resolve()
    inventory = (base / "inventory.json").read_text()
    (base / "inventory.json").write_text('{"nodes": [1, 2]}')
    _reseal(base)
    refused = _run(pytester, "now", f"--cluster-baseline={base}")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    refused.stderr.fnmatch_lines([f"ERROR: --cluster-baseline={base}: inventory.json: nodes: "
                                  "expected a mapping of node names to their inventory, found "
                                  "a list of 2 item(s)"])
    assert not (pytester.path / "now").exists()
    (base / "inventory.json").write_text(inventory)
    _reseal(base)

    def odd(*_: object) -> None:
        raise TypeError("unsupported operand type(s) for +: 'int' and 'str'")

    monkeypatch.setattr("pytest_cluster.run.after_checks.compare", odd)
    crashed = _run(pytester, "odd", f"--cluster-baseline={base}")
    assert crashed.ret == pytest.ExitCode.TESTS_FAILED
    [failed] = [r for r in read_results(pytester.path / "odd" / "latest" /
                                        "results.jsonl").results if r["outcome"] == "failed"]
    assert failed["nodeid"] == "pytest_cluster/baseline.py::test_same_nodes[cluster]"
    assert failed["message"].endswith(
        "could not be compared: TypeError: unsupported operand type(s) for +: 'int' and 'str'")


@pytest.mark.slow
def test_a_baseline_key_requires_the_baseline_signed_by_it(pytester: pytest.Pytester,
                                                          tmp_path: Path) -> None:
    private, public, _ = ed25519_key(tmp_path, "accepted")
    _, other, _ = ed25519_key(tmp_path, "other")
    assert _run(pytester, "accepted", f"--cluster-sign-key={private}").ret == \
        pytest.ExitCode.OK
    base = (pytester.path / "accepted" / "latest").resolve()
    good = _run(pytester, "good", f"--cluster-baseline={base}",
                f"--cluster-baseline-key={public}")
    assert good.ret == pytest.ExitCode.OK
    report = (pytester.path / "good" / "latest" / "report.html").read_text()
    assert "the signature checked against SHA256:" in report
    _says_its_signature(pytester, good, "good", VERIFIED, load(base, public).checked_key)
    wrong = _run(pytester, "wrong", f"--cluster-baseline={base}",
                 f"--cluster-baseline-key={other}")
    assert wrong.ret == pytest.ExitCode.USAGE_ERROR
    wrong.stderr.fnmatch_lines(["*it fails pytest-cluster verify*signature: INVALID*"])
    assert not (pytester.path / "wrong").exists()
    alone = _run(pytester, "alone", f"--cluster-baseline-key={public}")
    assert alone.ret == pytest.ExitCode.USAGE_ERROR
    alone.stderr.fnmatch_lines(["*--cluster-baseline-key needs --cluster-baseline=DIR*"])


def _says_its_signature(pytester: pytest.Pytester, run: pytest.RunResult, reports: str,
                        signature: str, key: str | None) -> None:
    """The run says how its baseline's signature stood: the terminal's baseline line, the
    end record's baseline and verdict.json's (valid against its schema)."""
    run_dir = pytester.path / reports / "latest"
    end = read_results(run_dir / "results.jsonl").end
    assert end is not None
    assert (end["baseline"]["signature"], end["baseline"]["signature_key"]) == (signature, key)
    run.stdout.fnmatch_lines([f"*baseline: compared with *; {signature_said(signature, key)}"
                              "): * case(s), * failed"])
    verdict = json.loads((run_dir / "verdict.json").read_text())
    assert verdict["baseline"] == end["baseline"]
    Draft202012Validator(verdict_schema()).validate(verdict)


def _rehash(run_dir: Path) -> None:
    """A forger's bundle that keeps its signatures: every subject's digest made again over
    the files as they are now (the signature no longer holds; verify without a key
    passes)."""
    manifest = json.loads((run_dir / MANIFEST).read_text())
    statement = json.loads(base64.b64decode(manifest["payload"]))
    for subject in statement["subject"]:
        data = (run_dir / subject["name"]).read_bytes()
        subject["digest"]["sha256"] = hashlib.sha256(data).hexdigest()
        subject["annotations"]["size"] = len(data)
    manifest["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()
    (run_dir / MANIFEST).write_text(json.dumps(manifest))


@pytest.mark.slow
def test_a_run_says_whether_its_baselines_signature_was_checked(
        pytester: pytest.Pytester, tmp_path: Path) -> None:
    """A signed baseline tampered with and re-hashed (its signature INVALID) and used
    without --cluster-baseline-key: the run says the signature was not checked (it said
    only 'baseline: compared with ...', and recorded nothing of it); resealed unsigned:
    unsigned."""
    private, _, _ = ed25519_key(tmp_path, "accepted")
    assert _run(pytester, "accepted", f"--cluster-sign-key={private}").ret == \
        pytest.ExitCode.OK
    base = (pytester.path / "accepted" / "latest").resolve()
    with (base / "results.jsonl").open("a") as out:
        out.write("\n")
    _rehash(base)
    assert load(base).signed_by, "its manifest still names the signature"
    kept = _run(pytester, "kept", f"--cluster-baseline={base}")
    assert kept.ret == pytest.ExitCode.OK, kept.stdout.str()[-3000:]
    _says_its_signature(pytester, kept, "kept", NOT_CHECKED, None)
    _reseal(base)
    unsigned = _run(pytester, "unsigned", f"--cluster-baseline={base}")
    _says_its_signature(pytester, unsigned, "unsigned", UNSIGNED, None)

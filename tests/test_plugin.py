"""pytester: run `pytest --cluster=...` on small specs and check outcomes and evidence."""

from __future__ import annotations

import json
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from pytest_cluster.contract.clauses import declared
from pytest_cluster.contract.launcher_kind import LauncherKind
from pytest_cluster.contract.launchers import KINDS
from pytest_cluster.contract.sections import SECTIONS
from pytest_cluster.evidence.verdict.gate import gate
from tests.conftest import has_torch, on, on_no_node, planned

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")


def spec_text(fs: Path, nodes: str = "nodeA", host: str = "", storage: str = "",
              launcher: str = "local", extra: str = "") -> str:
    host = host or ('  cpu_cores: ">= 1"\n  memory: ">= 256 MiB"\n'
                    '  software: {kernel: ">= 3.0", python: ">= 3.8"}\n')
    storage = storage or ('    capacity: ">= 1 MiB"\n    write: ">= 1 MB/s"\n'
                          '    read: ">= 1 MB/s"\n    metadata: ">= 10 ops/s"\n')
    return (f"cluster:\n  name: test-cluster\n  nodes: {nodes}\n  launcher: {launcher}\n"
            f"  python: {sys.executable}\n  probe_timeout: 2 min\n{extra}"
            f"host:\n{host}"
            f"storage:\n  - path: {fs}\n    io_size: 4 MiB\n    metadata_files: 50\n{storage}")


def jsonl(pytester: pytest.Pytester) -> list[dict[str, Any]]:
    lines = (pytester.path / "reports" / "latest" / "results.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def junit_props(pytester: pytest.Pytester) -> dict[str, dict[str, str]]:
    root = ET.parse(pytester.path / "reports" / "latest" / "junit.xml").getroot()
    cases = {}
    for case in root.iter("testcase"):
        props = {p.get("name", ""): p.get("value", "") for p in case.iter("property")}
        cases[case.get("name", "")] = props
    return cases


@pytest.fixture
def fs(pytester: pytest.Pytester) -> Path:
    path = pytester.path / "fs"
    path.mkdir()
    return path


def test_every_storage_case_says_its_filesystem(pytester: pytest.Pytester) -> None:
    """Each case of a storage clause carries the filesystem its spec_key names (the rule
    `shared` too, which had none), in results.jsonl and in the metrics' label."""
    pytester.makefile(".yaml", trial=(
        "cluster: {name: t, nodes: 'n[1-2]', launcher: sim}\ngpus: {count: 8}\n"
        "storage:\n  - path: /shared\n    shared: true\n"
        "    checkpoint: {size_per_gpu: 1 GiB, write: '>= 1 GB/s per GPU'}\n"
        "sim: {gpus_per_node: 8}\n"))
    result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                                "--cluster-metrics=m.prom", "-k", "storage")
    assert result.ret == pytest.ExitCode.OK
    storage = [r for r in jsonl(pytester) if r["type"] == "result"
               and str(r["spec_key"]).startswith("storage[")]
    assert {r["spec_key"] for r in storage} >= {"storage[/shared].shared",
                                                "storage[/shared].checkpoint.write"}
    assert [r["spec_key"] for r in storage if r.get("filesystem") != "/shared"] == []
    metrics = (pytester.path / "m.prom").read_text()
    assert re.search(r'pytest_cluster_check_passed\{clause="storage\[/shared\]\.shared",'
                     r'[^}]*filesystem="/shared"', metrics), metrics


def test_packaged_suite_passes_with_evidence(pytester: pytest.Pytester, fs: Path) -> None:
    pytester.makefile(".yaml", trial=spec_text(fs))
    # what the spec leaves out: every checked section of the registry but its own, and
    # these of its host and storage sections (the fnmatch pattern's '[' as '[[]')
    absent = [s.name for s in SECTIONS if s.checked and s.name not in ("host", "storage")]
    left = ["host.cpu_threads", "host.golden", "host.memory_available",
            "host.same_software (needs 2+ nodes)",
            *(f"storage[[]{fs}].{key}" for key in ("checkpoint", "dataloader", "free",
                                                   "import_torch", "shared"))]
    not_written = sorted([*absent, *left], key=lambda item: item.replace("[[]", "["))
    every = len(planned(pytester, spec_text(fs)))
    result = pytester.runpytest("--cluster=trial.yaml")
    result.assert_outcomes(passed=every)
    result.stdout.fnmatch_lines([
        f"*cluster test-cluster: {every} of {every} contract check(s) ran, 0 failed; nodes "
        "covered: all 1 node(s)*",
        "*nodes: 1 ACCEPTED, 0 REJECTED, 0 UNREACHABLE, 0 NOT CHECKED*",
        f"*not in contract, not tested: {', '.join(not_written)}",
        "*evidence: reports/2*Z-test-cluster/ (inventory.json, junit.xml, probes/, report.html, "
        "results.jsonl, verdict.json, manifest.intoto.json); reports/latest -> "
        "2*Z-test-cluster*",
        "*manifest: reports/2*Z-test-cluster/manifest.intoto.json sha256 *, UNSIGNED; "
        "check it: pytest-cluster verify reports/2*Z-test-cluster",
    ])
    props = junit_props(pytester)
    write = props[f"test_storage_write[nodeA-{fs}]"]
    assert write["node"] == "nodeA"
    assert write["filesystem"] == str(fs)
    assert write["spec_key"] == f"storage[{fs}].write"
    assert write["spec_line"] == "16"
    assert write["comparison"] == ">="
    assert write["unit"] == "MB/s"
    assert float(write["required"]) == 1.0
    assert float(write["measured"]) > 1.0
    assert write["simulated"] == "False"
    assert json.loads(write["raw"])["bytes"] == 4 * 2**20
    records = jsonl(pytester)
    assert records[0]["type"] == "run"
    assert records[0]["cluster"] == "test-cluster"
    results = [r for r in records if r["type"] == "result"]
    assert len(results) == every
    assert {r["outcome"] for r in results} == {"passed"}
    kernel = next(r for r in results if r["spec_key"] == "host.software.kernel")
    assert kernel["measured"] == __import__("platform").release()
    html = (pytester.path / "reports" / "latest" / "report.html").read_text()
    assert "test-cluster: ACCEPTED - 1 accepted, 0 rejected, 0 unreachable, 0 not checked" in html
    assert f"storage[{fs}].write" in html
    assert (pytester.path / "reports" / "latest" / "probes").is_dir()


def test_impossible_requirement_fails_with_the_numbers(pytester: pytest.Pytester,
                                                       fs: Path) -> None:
    pytester.makefile(".yaml", trial=spec_text(
        fs, host='  cpu_cores: ">= 100000"\n',
        storage='    write: ">= 1000 TB/s"\n    capacity: ">= 1 EB"\n'.replace(
            '    capacity: ">= 1 EB"\n', '    capacity: ">= 1000 PB"\n')))
    every = len(planned(pytester, (pytester.path / "trial.yaml").read_text()))
    result = pytester.runpytest("--cluster=trial.yaml")
    result.assert_outcomes(passed=every - 3, failed=3)  # the three out of reach
    result.stdout.fnmatch_lines([
        "*nodeA cpu_cores: measured * < required 100000 (0.00*% of required)*",
        f"*nodeA {fs} capacity: measured * PB < required 1000 PB (*% of required)*",
        f"*nodeA {fs} write: measured * TB/s < required 1000 TB/s (*% of required)*",
    ])
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    failed = [r for r in jsonl(pytester) if r.get("outcome") == "failed"]
    assert {r["spec_key"] for r in failed} == {"host.cpu_cores", f"storage[{fs}].write",
                                              f"storage[{fs}].capacity"}
    assert all(r["message"].startswith("Failed: nodeA") for r in failed)
    html = (pytester.path / "reports" / "latest" / "report.html").read_text()
    assert re.search(r"<td>host.cpu_cores</td><td>&gt;= 100000</td><td>0</td><td>1</td>"
                     r"<td>nodeA</td><td>\d+ \(nodeA\)</td><td>-\d+\.\d % below required</td>",
                     html)


@pytest.mark.slow
def test_a_host_clause_is_a_declaration_and_a_probe_field(pytester: pytest.Pytester,
                                                           fs: Path) -> None:
    """host.memory_available is one declaration (contract/clauses.py) of a field the host probe
    reads: the spec takes it, a test per node checks it, named and measured as declared."""
    text = spec_text(fs, nodes="node[1-2]",
                     host='  memory_available: ">= 1 MiB"\n  cpu_cores: 1\n',
                     storage='    capacity: ">= 1 MiB"\n')
    pytester.makefile(".yaml", trial=text)
    result = pytester.runpytest("--cluster=trial.yaml", "-v", "-k", "memory")
    result.assert_outcomes(passed=len(planned(pytester, text, "-k", "memory")))
    result.stdout.fnmatch_lines(["*test_memory_available[[]node1[]] PASSED*",
                                 "*test_memory_available[[]node2[]] PASSED*"])
    records = [r for r in jsonl(pytester) if r.get("spec_key") == "host.memory_available"]
    assert [r["case"] for r in records] == [
        f"acceptance/test_host.py::test_memory_available[{n}]" for n in ("node1", "node2")]
    assert all(r["clause"] == "host.memory_available" and r["unit"] == "MiB"
               and r["measured"] > 1 and r["spec_line"] == 8 for r in records)
    assert records[0]["method"].startswith("/proc/meminfo MemAvailable")
    text = spec_text(fs, host='  memory_available: 1000 PiB\n',
                     storage='    capacity: ">= 1 MiB"\n')
    pytester.makefile(".yaml", trial=text)
    result = pytester.runpytest("--cluster=trial.yaml", "-k", "memory_available")
    result.assert_outcomes(failed=len(planned(pytester, text, "-k", "memory_available")))
    result.stdout.fnmatch_lines(["*nodeA memory_available: measured * < required 1000 PiB "
                                 "(*% of required)*"])


@pytest.mark.slow
def test_select_a_node_with_k(pytester: pytest.Pytester, fs: Path) -> None:
    pytester.makefile(".yaml", trial=spec_text(fs, nodes="node[01-03]"))
    mine = planned(pytester, spec_text(fs, nodes="node[01-03]"), "-k", "node02")
    assert mine == on(planned(pytester, spec_text(fs, nodes="node[01-03]")), "node02")
    result = pytester.runpytest("--cluster=trial.yaml", "-k", "node02", "-v")
    result.assert_outcomes(passed=len(mine))
    result.stdout.fnmatch_lines(["*test_cpu_cores[[]node02[]] PASSED*",
                                 f"*test_storage_read[[]node02-{fs}[]] PASSED*"])
    assert "node01" not in "".join(r.get("node", "") for r in jsonl(pytester)[1:])


def test_same_software_on_several_nodes(pytester: pytest.Pytester, fs: Path) -> None:
    pytester.makefile(".yaml", trial=spec_text(fs, nodes="node[1-2]"))
    result = pytester.runpytest("--cluster=trial.yaml", "-v", "-k", "same_on_all")
    result.assert_outcomes(passed=len(declared("host.same_software").members))
    result.stdout.fnmatch_lines(["*test_software_same_on_all_nodes[[]kernel[]] PASSED*"])


@pytest.mark.realcomponents
@pytest.mark.skipif(not has_torch(), reason="torch is not installed")
def test_import_torch_clause(pytester: pytest.Pytester, fs: Path) -> None:
    pytester.makefile(".yaml", trial=spec_text(
        fs, host='  cpu_cores: ">= 1"\n',
        storage='    import_torch: "<= 2 min"\n    import_repeats: 1\n    cold_cache: false\n'))
    result = pytester.runpytest("--cluster=trial.yaml")
    result.assert_outcomes(passed=2)
    record = next(r for r in jsonl(pytester) if r.get("spec_key", "").endswith("import_torch"))
    assert record["unit"] == "min"
    assert record["method"].startswith("warm: median of 1 runs")
    assert record["raw"]["command"] == [sys.executable, "-c", "import torch"]


def add_launcher(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, name: str,
                 source: str, cls: str) -> None:
    """A launcher of this test's own, known by `name` to the registry and to the spec."""
    pytester.makepyfile(**{f"{name}launcher": source})
    pytester.syspathinsert()
    monkeypatch.setitem(KINDS, name, LauncherKind(name, f"{name}launcher:{cls}", python=None))


HUNG_LAUNCHER = """
import sys
from pytest_cluster.launchers.fanout import fan_out
from pytest_cluster.launchers.process import run_process
from pytest_cluster.launchers.local import LocalLauncher, probe_command

class HungNode(LocalLauncher):
    '''Node "hung" never answers; the others are this machine.'''
    name = "hung"

    def run(self, call, nodes, timeout_s):
        def one(node):
            if node == "hung":
                return run_process(node, call.name, [sys.executable, "-c",
                                   "import time; time.sleep(600)"], "", timeout_s)
            return run_process(node, call.name, probe_command(self.spec.python, call),
                               call.source(), timeout_s)
        return fan_out(nodes, one, self.spec.parallel)
"""


@pytest.mark.slow
def test_hung_node_fails_only_its_own_tests(pytester: pytest.Pytester, fs: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    add_launcher(pytester, monkeypatch, "hung", HUNG_LAUNCHER, "HungNode")
    pytester.makefile(".yaml", trial=spec_text(fs, nodes="[good, hung]", launcher="hung")
                      .replace("probe_timeout: 2 min", "probe_timeout: 6 s"))
    cases = planned(pytester, (pytester.path / "trial.yaml").read_text())
    result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:randomly")
    # "hung" fails its own; host.same_software (a case a package) is not established while
    # it does not answer: a cluster check that fails, never a pass on "good" alone
    result.assert_outcomes(passed=len(on(cases, "good")), failed=len(on(cases, "hung")) + len(
        on_no_node(cases, ("good", "hung"))))
    result.stdout.fnmatch_lines(["*hung: host probe timeout: no answer within 6 s; killed*"])
    failed = [r for r in jsonl(pytester) if r.get("outcome") == "failed"]
    assert {r["node"] for r in failed} == {"hung", "all"}
    assert {r["error_kind"] for r in failed if r["node"] == "hung"} == {"timeout"}
    same = [r for r in failed if r["node"] == "all"]
    assert {r["error_kind"] for r in same} == {"not_all_nodes"}
    assert all(r["message"].startswith(
        "Failed: " + r["spec_key"].rsplit(".", 1)[1] + ": ") for r in same)
    for r in same:
        package = r["spec_key"].rsplit(".", 1)[1]
        assert (f"on good; 1 of 2 node(s) did not answer (hung), so the same {package} on "
                "every node is not established (first: hung: host probe timeout") in (
                    r["message"])
    verdict = json.loads((pytester.path / "reports" / "latest" / "verdict.json").read_text())
    assert [v["verdict"] for v in verdict["nodes"]] == ["ACCEPTED", "UNREACHABLE"]


def test_results_are_streamed_as_tests_finish(pytester: pytest.Pytester, fs: Path) -> None:
    pytester.makefile(".yaml", trial=spec_text(fs))
    pytester.makepyfile(test_mine="""
        import json, pathlib, pytest

        def test_a_cores(cluster_spec, node, host_result, evidence):
            evidence.check(cluster_spec.host.cpu_cores, host_result.payload()["cpu"]["cores"],
                           node=node, result=host_result)

        def test_b_reads_results_so_far(node):
            lines = pathlib.Path("reports/latest/results.jsonl").read_text().splitlines()
            assert json.loads(lines[-1])["nodeid"].endswith("test_a_cores[nodeA]")
            pytest.exit("interrupted on purpose")
    """)
    result = pytester.runpytest("--cluster=trial.yaml", "test_mine.py")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    records = jsonl(pytester)
    assert [r["nodeid"] for r in records[1:-1]] == ["test_mine.py::test_a_cores[nodeA]"]
    assert records[-1]["type"] == "end"
    assert records[-1]["status"] == "interrupted"
    assert records[-1]["exit_code"] == pytest.ExitCode.INTERRUPTED
    # what was probed is kept; nothing more is asked of the nodes once interrupted
    inventory = json.loads((pytester.path / "reports" / "latest" / "inventory.json")
                           .read_text())
    assert inventory["complete"] is False
    assert inventory["nodes"]["nodeA"]["cpu"]["cores"] >= 1
    assert inventory["nodes"]["nodeA"]["interfaces"] == {
        "unreadable": "not recorded: the run was interrupted before the NIC probe ran on "
                      "this node"}
    assert inventory["nodes"]["nodeA"]["filesystems"] == {
        "unreadable": "not recorded: the run was interrupted before the inventory probe "
                      "ran on this node"}


def test_no_reports_when_asked(pytester: pytest.Pytester, fs: Path) -> None:
    pytester.makefile(".yaml", trial=spec_text(fs, host='  cpu_cores: ">= 1"\n',
                                               storage='    capacity: ">= 1 MiB"\n'))
    every = len(planned(pytester, (pytester.path / "trial.yaml").read_text()))
    result = pytester.runpytest("--cluster=trial.yaml", "--cluster-reports=")
    result.assert_outcomes(passed=every)
    assert not (pytester.path / "reports").exists()


@pytest.mark.slow
def test_xdist_probes_each_node_once(pytester: pytest.Pytester, fs: Path) -> None:
    pytester.makefile(".yaml", trial=spec_text(fs, nodes="n[1-3]"))
    result = pytester.runpytest_subprocess("--cluster=trial.yaml", "--tx", "2*popen",
                                           "--dist", "load", "-p", "xdist")  # even on 2 CPUs
    result.assert_outcomes(passed=len(planned(pytester, spec_text(fs, nodes="n[1-3]"))))
    results = [r for r in jsonl(pytester) if r["type"] == "result" and "probe_run" in r]
    runs: dict[tuple[str, str], set[str]] = {}
    for record in results:
        probe = "host" if record["spec_key"].startswith("host") else "storage"
        runs.setdefault((probe, record["node"]), set()).add(record["probe_run"])
    assert len(runs) == 6
    assert all(len(ids) == 1 for ids in runs.values()), runs
    result.stdout.fnmatch_lines(["*2 workers*"])
    probe_files = list((pytester.path / "reports" / "latest" / "probes").glob("*-*[0-9a-f].json"))
    assert len(probe_files) == 2


ODD_LAUNCHER = """
import dataclasses
from pytest_cluster.launchers.local import LocalLauncher

class OddKernel(LocalLauncher):
    '''Node "odd" reports an old kernel; the others are this machine as it is.'''
    name = "odd"

    def run(self, call, nodes, timeout_s):
        results = super().run(call, nodes, timeout_s)
        if call.name == "host":
            data = dict(results["odd"].data)
            data["versions"] = {**data["versions"], "kernel": "4.19.0-old"}
            results["odd"] = dataclasses.replace(results["odd"], data=data)
        return results
"""


def test_software_mismatch_names_the_odd_node(pytester: pytest.Pytester, fs: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    add_launcher(pytester, monkeypatch, "odd", ODD_LAUNCHER, "OddKernel")
    text = spec_text(fs, nodes="[n1, odd]", launcher="odd",
                     host='  software: {kernel: ">= 5.0"}\n',
                     storage='    capacity: ">= 1 MiB"\n')
    pytester.makefile(".yaml", trial=text)
    result = pytester.runpytest("--cluster=trial.yaml", "-k", "kernel")
    # the odd node's kernel fails its own cases and "the same on every node" (the cluster's)
    cases = planned(pytester, text, "-k", "kernel")
    odd = on(cases, "odd") + on_no_node(cases, ("n1", "odd"))
    result.assert_outcomes(passed=len(cases) - len(odd), failed=len(odd))
    release = __import__("platform").release()
    result.stdout.fnmatch_lines([
        "*odd kernel: found 4.19.0-old, which does not satisfy >= 5.0*",
        f"*kernel differs between nodes: {release} on n1; 4.19.0-old on odd*",
    ])


@pytest.mark.parametrize("options", [(), ("--cluster-node=nodeA",)])
def test_missing_filesystem_fails_its_clauses_with_the_reason_and_drains_no_node(
        pytester: pytest.Pytester, fs: Path, options: tuple[str, ...]) -> None:
    """The path missing on the only node checked (a storage outage seen from a prolog)
    cannot single the node out: each clause fails saying why, undecided, and the node is
    NOT CHECKED, an ERROR the gate never drains (it was a FAIL that drained it)."""
    gone = fs / "not-mounted"
    pytester.makefile(".yaml", trial=spec_text(gone, host='  cpu_cores: ">= 1"\n'))
    cases = planned(pytester, spec_text(gone, host='  cpu_cores: ">= 1"\n'), *options)
    on_it = on(cases, f"nodeA-{gone}")  # its storage clauses: undecided
    result = pytester.runpytest("--cluster=trial.yaml", *options)
    result.assert_outcomes(passed=len(cases) - len(on_it), failed=len(on_it))
    result.stdout.fnmatch_lines([
        f"*nodeA {gone} write: cannot measure: {gone} does not exist or is not a directory "
        "on this node, on the only node checked: a fault of the filesystem, not nodeA's*"])
    failed = [r for r in jsonl(pytester) if r.get("outcome") == "failed"]
    assert {r["error_kind"] for r in failed} == {"undecided"}
    assert {r["requirement"] for r in failed} == {">= 1 MiB", ">= 1 MB/s", ">= 10 ops/s"}
    decision = gate(pytester.path / "reports", 1)
    assert decision.outcome == "ERROR" and decision.failed == ()
    assert decision.lines[0].startswith("ERROR nodeA: not checked: ")


def test_a_version_not_found_names_the_interpreter_asked(pytester: pytest.Pytester,
                                                         fs: Path) -> None:
    pytester.makefile(".yaml", trial=spec_text(
        fs, host='  software: {nccl: ">= 2.18"}\n'))
    result = pytester.runpytest("--cluster=trial.yaml", "-k", "software_version")
    result.stdout.fnmatch_lines([
        "*nodeA nccl: not found on the node (required >= 2.18); asked "
        f"{sys.executable} on nodeA*"])

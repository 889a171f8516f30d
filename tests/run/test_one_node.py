"""--cluster-node: a run of some nodes of the contract (a provider's gate, a SLURM prolog).
Which nodes a value names, the spec they are checked against, and whole runs of the sim
cluster: only the chosen nodes are collected and judged, the clauses across nodes are listed
as not tested here, a name not in the spec is a usage error, and a prolog checks its host."""

from __future__ import annotations

import socket

import pytest

from pytest_cluster.contract import parse_spec
from pytest_cluster.contract.narrow import chosen, in_slurm_script, narrow, this_host
from pytest_cluster.contract.promised import promised
from tests.conftest import planned
from tests.contract.sections.test_fabric import IB
from tests.test_plugin import jsonl

NODES = tuple(f"gpu-{i:03d}" for i in range(1, 1025))


def test_a_value_names_nodes_a_hostlist_or_this_host() -> None:
    assert chosen(["gpu-007"], NODES, {}) == (("gpu-007",), False)
    assert chosen(["gpu-[010-012]", "gpu-003", "gpu-011"], NODES, {}) == (
        ("gpu-003", "gpu-010", "gpu-011", "gpu-012"), False)  # the spec's order, once each
    # `.`: SLURM's name for this host first (a prolog's SLURMD_NODENAME), then its own
    assert chosen(["."], NODES, {"SLURMD_NODENAME": "gpu-042"}) == (("gpu-042",), True)
    assert this_host({})[0] == socket.gethostname()
    assert chosen([".", "gpu-042"], NODES, {"SLURMD_NODENAME": "gpu-042"})[1] is True
    assert chosen([".", "gpu-043"], NODES, {"SLURMD_NODENAME": "gpu-042"})[1] is False
    with pytest.raises(ValueError, match=r"not in the spec's cluster\.nodes: gpu-2000"):
        chosen(["gpu-[1024-1025]", "gpu-2000"][1:], NODES, {})
    with pytest.raises(ValueError, match=r"not in the spec's cluster\.nodes: gpu-1025, "
                                         r"gpu-1026, gpu-1027, gpu-1028, gpu-1029 and 1 more"):
        chosen(["gpu-[1020-1030]"], NODES, {})
    with pytest.raises(ValueError, match=r"this host \(elsewhere"):
        chosen(["."], NODES, {"SLURMD_NODENAME": "elsewhere"})
    with pytest.raises(ValueError, match="'gpu-\\[9-1\\]': "):
        chosen(["gpu-[9-1]"], NODES, {})
    assert in_slurm_script({"SLURM_SCRIPT_CONTEXT": "prolog_slurmd"})
    assert not in_slurm_script({"SLURM_SCRIPT_CONTEXT": "prolog_slurmctld"})
    assert not in_slurm_script({})


SPEC = """\
cluster: {name: c, nodes: "n[1-4]", launcher: ssh}
ssh: {user: root}
host: {cpu_cores: 1, same_software: true}
interconnect:
  inter_node: {kind: ethernet, nics_per_node: 1, rate_per_nic: 10 Gb/s}
  payloads: [1 MiB]
  busbw: ">= 50%"
"""


def test_a_narrowed_spec_keeps_the_whole_one_to_say_what_is_not_checked() -> None:
    whole = parse_spec(SPEC, "t.yaml")
    spec = narrow(whole, ["n3"], here=True)
    assert spec.cluster.nodes == ("n3",) and spec.cluster.chosen_from == whole.cluster.nodes
    assert spec.cluster.launcher == "local"  # this host: probes run here, not over ssh
    assert narrow(whole, ["n3"]).cluster.launcher == "ssh"
    assert spec.interconnect is not None and spec.interconnect.node_counts == ()
    found = promised(spec, "interconnect.busbw[inter_node]", {})
    assert (found.promised, found.not_in_contract) == (False, (
        "interconnect.busbw[inter_node] (across nodes: this run covers 1 of 4 nodes "
        "(--cluster-node))"))
    same = promised(spec, "host.same_software", {"package": "torch"})
    assert same.name == "host.same_software.torch" and not same.promised
    assert promised(spec, "host.cpu_cores", {"node": "n3"}).promised
    assert promised(spec, "gpus.ecc_uncorrected", {}).not_in_contract == "gpus"


STORAGE = """\
cluster: {name: c, nodes: "n[1-4]", launcher: sim}
gpus: {count: 8}
storage:
  - path: /shared
    shared: true
    checkpoint: {size_per_gpu: 1 GiB, write: @RATE@, read: @RATE@}
    dataloader: {iops: @IOPS@, read: @RATE@, metadata: @OPS@}
sim: {}
"""
#: Each bound of what every node does at once, by what it is per ('': the cluster's total)
PER = {"": ("'>= 50 GB/s'", "'>= 500 kIOPS'", "'>= 10 kops/s'"),
       "node": ("'>= 5 GB/s per node'", "'>= 50 kIOPS per node'", "'>= 1 kops/s per node'"),
       "gpu": ("'>= 1 GB/s per GPU'", "'>= 5 kIOPS per GPU'", "'>= 100 ops/s per GPU'")}


@pytest.mark.parametrize("per", PER)
def test_a_bound_on_the_whole_clusters_total_is_across_nodes(per: str) -> None:
    """`dataloader.iops: '>= 500 kIOPS'` is the cluster's total: a run of one node does
    not hold its node's reads against it (it failed every healthy node), it lists it as
    across nodes; a bound per node or per GPU is that node's to keep. Every declared bound
    of the burst and the data loader (those with a basis) is asked."""
    bound, iops, ops = PER[per]
    whole = parse_spec(STORAGE.replace("@RATE@", bound).replace("@IOPS@", iops)
                       .replace("@OPS@", ops), "t.yaml")
    fs, = whole.storage
    spec = narrow(whole, ["n3"])
    kinds = [(part, getattr(fs, part)) for part in ("checkpoint", "dataloader")]
    keys = [key for _, record in kinds for key, on in record.basis if on == per]
    assert len(keys) == 5  # every bound written, each on this basis
    for key in keys:
        found = promised(spec, f"storage.{key}", {"filesystem": spec.storage[0]})
        assert found.promised == bool(per), (key, found)
        if not per:
            assert found.not_in_contract == (f"storage[/shared].{key} (across nodes: this "
                                             "run covers 1 of 4 nodes (--cluster-node))")
        assert promised(whole, f"storage.{key}", {"filesystem": fs}).promised


SIM = """\
cluster: {name: c, nodes: "n[1-4]", launcher: sim}
host: {cpu_cores: 96}
""" + IB + """\
sim:
  faults:
    - {node: n2, down: true}
"""


def test_a_run_of_one_node_collects_judges_and_reports_that_node_alone(
        pytester: pytest.Pytester) -> None:
    (pytester.path / "trial.yaml").write_text(SIM)
    mine = len(planned(pytester, SIM, "--cluster-node=n3"))  # n3's cpu_cores
    result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                                "--cluster-node=n3")
    result.assert_outcomes(passed=mine)
    cases = [r["case"] for r in jsonl(pytester) if r.get("type") == "result"]
    assert all("n3" in case for case in cases), cases
    result.stdout.fnmatch_lines([
        f"cluster c: {mine} of {mine} contract check(s) ran, 0 failed; nodes covered: all 1 "
        "node(s) (a run of 1 of the spec's 4 nodes: --cluster-node)",
        "*nodes: 1 ACCEPTED, 0 REJECTED, 0 UNREACHABLE, 0 NOT CHECKED*"])
    assert ("not tested here, across nodes (this run covers 1 of 4 nodes (--cluster-node)): "
            "host.same_software.cuda, ") in result.stdout.str()
    assert "interconnect.busbw[inter_node], interconnect.stress_loop\n" in result.stdout.str()
    verdict = (pytester.path / "reports" / "latest" / "verdict.json").read_text()
    assert '"n3"' in verdict and '"n2"' not in verdict  # n2 is down, but not in this run
    down = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                              "--cluster-node=n2")
    assert down.ret == pytest.ExitCode.TESTS_FAILED
    # no other node of the run answered: its silence is not known to be its own
    down.stdout.fnmatch_lines(["*NOT CHECKED n2: this machine could not check it: no node "
                               "answered this machine*"])


def test_a_node_not_in_the_spec_is_a_usage_error(pytester: pytest.Pytester) -> None:
    (pytester.path / "trial.yaml").write_text(SIM)
    result = pytester.runpytest("--cluster=trial.yaml", "--cluster-node=n9")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--cluster-node: not in the spec's cluster.nodes: n9*"])


def test_a_slurm_prolog_checks_its_own_node(pytester: pytest.Pytester,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """SLURM sets SLURM_SCRIPT_CONTEXT and SLURMD_NODENAME for a prolog: without
    --cluster-node, the run is of that node alone."""
    (pytester.path / "trial.yaml").write_text(SIM)
    monkeypatch.setenv("SLURM_SCRIPT_CONTEXT", "prolog_slurmd")
    monkeypatch.setenv("SLURMD_NODENAME", "n4")
    result = pytester.runpytest_subprocess("--cluster=trial.yaml", "-p", "no:cacheprovider",
                                           "-m", "sanity")
    result.assert_outcomes(passed=len(planned(pytester, SIM, "--cluster-node=n4", "-m",
                                              "sanity")))
    assert {r["node"] for r in jsonl(pytester) if r.get("type") == "result"} == {"n4"}

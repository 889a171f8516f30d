"""The fabric section: its spec, which ports it counts, the simulated cluster's faults
named by node and port, and (marked realcomponents) real ports read from the kernel's
sysfs inside network namespaces over ssh."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, cast

import pytest

from pytest_cluster.contract import parse_spec
from pytest_cluster.contract.model import FabricSpec
from pytest_cluster.errors import SpecError
from pytest_cluster.evidence.verdict.blame import UNDECIDED
from pytest_cluster.evidence.verdict.nodes import NOT_CHECKED, REJECTED
from pytest_cluster.measure.inventory_file import Unreadable
from pytest_cluster.measure.network import fabric
from pytest_cluster.measure.network.node_search import COULD_NOT_DECIDE, NO_GOOD
from tests.conftest import faulted, on, on_nodes, planned
from tests.netns_cluster import NetnsCluster
from tests.test_plugin import jsonl

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
HEAD = "cluster: {name: c, nodes: [a, b], launcher: sim}\nsim: {}\n"


def fabric_of(text: str) -> FabricSpec:
    spec = parse_spec(HEAD + text, "t.yaml")
    assert spec.fabric is not None
    return spec.fabric


def test_the_section_parses_as_declared() -> None:
    spec = fabric_of("fabric:\n  devices: 'mlx5_*'\n  ports: 8\n  rate: 400 Gb/s\n"
                     "  link_layer: roce\n  mtu: 4096\n")
    assert spec.devices == "mlx5_*" and spec.link_layer == "Ethernet"
    ports, rate, mtu = (spec.clause(k) for k in ("ports", "rate", "mtu"))
    assert ports is not None and ports.requirement.text == ">= 8" and ports.line == 5
    assert rate is not None and rate.requirement.bound.value == 400e9 / 8
    assert mtu is not None and mtu.requirement.bound.value == 4096
    rule = spec.rule("link_layer")
    assert rule is not None and rule.text == "Ethernet on every counted port"
    firmware = spec.rule("same_firmware")
    assert firmware is not None and firmware.line == 0  # implied
    assert spec.flap_s == 30.0  # the default: NVIDIA's "down 30 s or more is critical"
    errors = fabric_of("fabric:\n  symbol_errors: 10 /h\n  flap: 2 min\n")
    bound = errors.clause("symbol_errors")
    assert bound is not None and bound.requirement.op == "<="
    assert bound.requirement.bound.value == 10 / 3600 and errors.flap_s == 120.0


@pytest.mark.parametrize(("body", "message"), [
    ("fabric: {link_layer: token-ring}",
     "t.yaml:3: fabric.link_layer: expected InfiniBand or Ethernet (RoCE), got 'token-ring'"),
    ("fabric: {devices: 'mlx5_*; rm -rf /'}",
     "t.yaml:3: fabric.devices: expected a glob of port or device names like 'mlx5_*'"),
    ("fabric: {ports: 8, rtae: 400 Gb/s}", "t.yaml:3: fabric.rtae: unknown key"),
    ("fabric: {rate: 400 GB}", "t.yaml:3: fabric.rate:"),
    ("fabric: {symbol_errors: 10 /week}",
     "t.yaml:3: fabric.symbol_errors: expected a rate of events like '10 /h', got '10 /week' "
     "(unknown unit '/week'; known units: /s, /min, /h, /day)"),
    ("fabric: {symbol_errors: 10}", "t.yaml:3: fabric.symbol_errors: expected a rate of "
                                    "events like '10 /h', got 10 (a number needs a unit)"),
    ("fabric: {flap: 8 days}", "t.yaml:3: fabric.flap: expected a time"),
    ("fabric: {flap: -1 s}", "t.yaml:3: fabric.flap: expected a time"),
])
def test_a_bad_fabric_section_is_a_usage_error_naming_the_key(body: str,
                                                               message: str) -> None:
    with pytest.raises(SpecError) as caught:
        parse_spec("cluster: {name: c, nodes: [a, b], launcher: sim}\n"
                   + ("" if "sim:" in body else "sim: {}\n") + body + "\n", "t.yaml")
    assert message in str(caught.value)


def test_a_nic_fault_needs_the_nic() -> None:
    with pytest.raises(SpecError) as caught:
        parse_spec(HEAD.replace("sim: {}", "sim:\n  faults: [{node: a, nic_down: true}]")
                   + "fabric: {ports: 8}\n", "t.yaml")
    assert "sim.faults[0].nic: missing: a NIC fault needs the NIC's index" in str(caught.value)


def test_rail_busbw_needs_the_interconnect_section_its_jobs_run_by() -> None:
    with pytest.raises(SpecError) as caught:
        fabric_of("fabric:\n  rail_busbw: 40 GB/s\n")
    assert str(caught.value) == (
        "t.yaml:4: fabric.rail_busbw: needs an interconnect section: its jobs run with its "
        "backend, search_payload, warmup, iterations and timeout (or rail_tool: "
        "ib_write_bw)")
    perftest = fabric_of("fabric:\n  rail_busbw: 380 Gb/s\n  rail_tool: ib_write_bw\n"
                         "  rail_cuda: true\n")
    assert (perftest.rail_tool, perftest.rail_cuda) == ("ib_write_bw", True)
    with pytest.raises(SpecError, match=r"t\.yaml:5: fabric\.rail_cuda: only with "
                                        r"rail_tool: ib_write_bw"):
        fabric_of("fabric:\n  rail_busbw: 1 GB/s\n  rail_cuda: true\n"
                  "interconnect: {busbw: '>= 1 GB/s', payloads: [1 MiB]}\n")
    with pytest.raises(SpecError, match=r"fabric\.rail_tool: expected all_reduce or "
                                        r"ib_write_bw, got 'iperf3'"):
        fabric_of("fabric:\n  rail_busbw: 1 GB/s\n  rail_tool: iperf3\n")


#: An interconnect section of 8 NDR NICs per node, without the slow-node search.
IB = """\
interconnect:
  inter_node: {kind: infiniband, nics_per_node: 8, rate_per_nic: 400 Gb/s}
  payloads: [1 GiB]
  busbw: ">= 80%"
  node_network: false
"""
RAILS = """\
cluster: {name: rails, nodes: "n[1-4]", launcher: sim}
fabric: {rail_busbw: 40 GB/s}
""" + IB + """\
sim:
  faults:
    - {node: n3, nic: 5, nic_rate: 200 Gb/s}
    - {node: n2, nic: 1, nic_down: true}
"""


def test_no_rail_to_measure_in_the_sim_is_marked_simulated(pytester: pytest.Pytester) -> None:
    """Before: the one message of the rail case that read no search lacked [SIMULATED]."""
    text = RAILS.replace("{rail_busbw: 40 GB/s}", "{rail_busbw: 40 GB/s, devices: 'nothing*'}")
    (pytester.path / "trial.yaml").write_text(text)
    result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                                "-k", "rail_busbw")
    result.assert_outcomes(failed=len(planned(pytester, text, "-k", "rail_busbw")))
    assert failures(pytester)["test_fabric_rail_busbw[n1]"] == (
        "[SIMULATED] n1 rail_busbw: cannot measure: no rail to measure")
    lines = [r for r in jsonl(pytester) if r.get("clause") == "fabric.rail_busbw"]
    assert all(line["simulated"] for line in lines), lines


def test_each_rail_alone_names_the_slow_port_and_its_node(pytester: pytest.Pytester) -> None:
    """The slow-node search once per rail, every job bound to that port: n3's mlx5_5 at
    half rate fails n3 naming mlx5_5/1 (its partners reached the bar on that rail with
    other nodes); n2's mlx5_1 is down, seen by the NIC probe: no job runs on it, not
    measured, never a figure; n1 and n4 pass on all 8 rails."""
    (pytester.path / "trial.yaml").write_text(RAILS)
    result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                                "-k", "rail_busbw")
    cases = planned(pytester, RAILS, "-k", "rail_busbw")
    broken = on_nodes(cases, faulted(RAILS))  # n3's slow port, n2's port down
    result.assert_outcomes(passed=len(cases) - len(broken), failed=len(broken))
    found = failures(pytester)
    assert re.fullmatch(
        r"\[SIMULATED\] n3 rail_busbw: measured 2\d\.\d+ GB/s < required 40 GB/s "
        r"\([\d.]+% of required\); slow rail mlx5_5/1 2\d\.\d+ GB/s with n\d \(round 2 of 2; "
        r"n\d reached the bar on mlx5_5/1 with other nodes\)",
        found["test_fabric_rail_busbw[n3]"]), found
    assert found["test_fabric_rail_busbw[n2]"] == (
        "[SIMULATED] n2 rail_busbw: cannot measure: mlx5_1/1: port mlx5_1/1 on n2 is down "
        "(DOWN, Disabled), seen by the NIC probe at the run's start (fabric.ports): not run "
        "on it")
    lines = {r["node"]: r for r in jsonl(pytester) if r.get("clause") == "fabric.rail_busbw"}
    assert lines["n1"]["outcome"] == "passed" and 40 < lines["n1"]["measured"] < 50
    assert sorted(lines["n1"]["raw"]) == [f"mlx5_{i}/1" for i in range(8)]
    # gloo (the section's default backend) binds to the HCA port's IPoIB interface
    assert lines["n3"]["raw"]["mlx5_5/1"]["env"] == [["GLOO_SOCKET_IFNAME", "ibp5s0"]]
    assert lines["n3"]["simulated"] is True


def test_a_rail_search_that_cannot_decide_blames_no_node(pytester: pytest.Pytester) -> None:
    """Every node's links at half rate: no pair reaches the bar on any rail, so no node is
    known good and the search cannot tell which is slow. Each rail case is undecided, as
    interconnect.busbw[node_network] is: a cluster failure without a culprit, the node NOT
    CHECKED and never drained; n2's own port down still rejects n2 (fabric.ports, and its
    rail that ran no job). Before: every node REJECTED and drained for rail_busbw."""
    faults = "".join(f"    - {{node: n{i}, link_factor: 0.5}}\n" for i in range(1, 5))
    text = (RAILS.split("sim:")[0].replace("{rail_busbw", "{ports: 8, rail_busbw")
            + "sim:\n  faults:\n" + faults + "    - {node: n2, nic: 1, nic_down: true}\n")
    (pytester.path / "trial.yaml").write_text(text)
    result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                                "-k", "rail_busbw or ports")
    cases = planned(pytester, text, "-k", "rail_busbw or ports")
    # every rail case of the nodes at half rate (all of them), and the ports of the node
    # whose port is down
    rail_cases = tuple(c for c in cases if "rail_busbw" in c)
    port_cases = tuple(c for c in cases if "ports" in c)
    failing = (on_nodes(rail_cases, faulted(text, "link_factor"))
               + on_nodes(port_cases, faulted(text, "nic_down")))
    result.assert_outcomes(passed=len(cases) - len(failing), failed=len(failing))
    lines = {r["node"]: r for r in jsonl(pytester) if r.get("clause") == "fabric.rail_busbw"}
    assert {n: r["error_kind"] for n, r in lines.items()} == {
        "n1": UNDECIDED, "n2": "cannot_measure", "n3": UNDECIDED, "n4": UNDECIDED}
    rails = ", ".join(f"mlx5_{i}/1" for i in range(8))
    assert lines["n1"]["message"] == (
        f"Failed: [SIMULATED] n1 rail_busbw: {rails}: {COULD_NOT_DECIDE}: {NO_GOOD}")
    assert lines["n2"]["message"].startswith(
        "Failed: [SIMULATED] n2 rail_busbw: cannot measure: mlx5_1/1: port mlx5_1/1 on n2 "
        "is down"), lines["n2"]
    verdict = json.loads((pytester.path / "reports" / "latest" / "verdict.json").read_text())
    nodes = {n["node"]: n for n in verdict["nodes"]}
    assert {n: v["verdict"] for n, v in nodes.items()} == {
        "n1": NOT_CHECKED, "n2": REJECTED, "n3": NOT_CHECKED, "n4": NOT_CHECKED}
    assert nodes["n2"]["failed_clauses"] == ["fabric.ports", "fabric.rail_busbw"]
    assert nodes["n1"]["checks_undecided"] == 1 and nodes["n1"]["failed_clauses"] == []
    assert [line.split("NodeName=")[1].split()[0] for line in verdict["drain"]] == ["n2"]
    assert sorted(f["where"] for f in verdict["cluster_checks_failed"]
                  if f["kind"] == UNDECIDED) == ["n1", "n3", "n4"]


def test_after_a_failed_job_its_nodes_are_read_again_for_a_port_down(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """rails.recheck: a fresh NIC reading of the nodes of a rail's failed job (the sim's,
    as a node's probe answers); a node whose port is down runs no more on that rail. A
    launcher error tells nothing: no node is taken for down on it."""
    from pytest_cluster.errors import ClusterError
    from pytest_cluster.measure.cluster import Cluster
    from pytest_cluster.measure.network import rails

    cluster = Cluster(parse_spec(RAILS, "t.yaml"), tmp_path)
    assert rails.recheck(cluster, "mlx5_1/1", ["n1", "n2"]) == {
        "n2": "port mlx5_1/1 on n2 is down (DOWN, Disabled), seen by the NIC probe after a "
              "job on it failed: not run on it again"}
    assert rails.recheck(cluster, "mlx5_0/1", ["n1", "n2"]) == {}

    def broken(*_: object) -> None:
        raise ClusterError("ssh: connection refused")
    monkeypatch.setattr(cluster.launcher, "run", broken)
    assert rails.recheck(cluster, "mlx5_1/1", ["n1", "n2"]) == {}


def test_each_rail_by_ib_write_bw_names_the_slow_port_and_its_node(
        pytester: pytest.Pytester) -> None:
    """rail_tool: ib_write_bw: the perftest rank program on each pair (rank 0 serves, the
    others are its clients in turn), one HCA port at a time, read from perftest's own
    table; no interconnect section needed. The sim answers as ib_write_bw prints."""
    text = ("cluster: {name: rails, nodes: 'n[1-4]', launcher: sim}\n"
            "fabric: {rail_busbw: 350 Gb/s, rail_tool: ib_write_bw, rail_cuda: true}\n"
            "gpus: {model: H100-SXM-80GB, count: 8}\n"
            "sim:\n  gpus_per_node: 8\n  faults:\n    - {node: n3, nic: 5, nic_rate: 200 Gb/s}\n")
    (pytester.path / "trial.yaml").write_text(text)
    (slow,) = faulted(text)
    message = one_rail_failure(pytester, slow)
    assert re.fullmatch(r"\[SIMULATED\] n3 rail_busbw: measured 194 Gb/s < required 350 "
                        r"Gb/s \(55.43% of required\); slow rail mlx5_5/1 194 Gb/s with n\d "
                        r"\(round 2 of 2; n\d reached the bar on mlx5_5/1 with other nodes\)",
                        message), message
    lines = {r["node"]: r for r in jsonl(pytester) if r.get("clause") == "fabric.rail_busbw"}
    assert lines["n1"]["raw"]["mlx5_2/1"]["command"] == [
        "ib_write_bw", "-d", "mlx5_2", "-i", "1", "-s", "1048576", "-D", "5",
        "--report_gbits", "-F", "--use_cuda=2"]  # rail 2's GPU: GPUDirect RDMA
    assert lines["n1"]["method"].startswith("ib_write_bw")


def one_rail_failure(pytester: pytest.Pytester, node: str) -> str:
    """The message of `node`'s rail case, the one that fails (trial.yaml, -k rail_busbw):
    every other node's passes."""
    result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                                "-k", "rail_busbw")
    cases = planned(pytester, (pytester.path / "trial.yaml").read_text(), "-k", "rail_busbw")
    slow = on(cases, node)
    result.assert_outcomes(passed=len(cases) - len(slow), failed=len(slow))
    found = failures(pytester)
    assert set(found) == set(slow), found
    (message,) = found.values()
    return message


def failures(pytester: pytest.Pytester) -> dict[str, str]:
    return {r["case"].split("::")[1]: r["message"].removeprefix("Failed: ")
            for r in jsonl(pytester)
            if r.get("type") == "result" and r.get("outcome") == "failed"}


def test_the_simulated_fabric_faults_fail_exactly_their_cases(
        pytester: pytest.Pytester) -> None:
    """examples/sim-h100-fabric-faulty.yaml: a port down, one at half rate, an older
    firmware and a port that went down during the run fail their clause on their node,
    each naming the port; the rest pass. The counters are read after every other case."""
    spec = pytester.path / "trial.yaml"
    spec.write_text((EXAMPLES / "sim-h100-fabric-faulty.yaml").read_text())
    every = planned(pytester, spec.read_text())
    failing = {"test_fabric_ports[sim-gpu-02]", "test_fabric_rate[sim-gpu-03]",
               "test_collective_inter_node[all_reduce-4GiB-4nodes]",
               "test_fabric_same_firmware", "test_fabric_counters[sim-gpu-01]",
               "test_fabric_symbol_errors[sim-gpu-02]", "test_fabric_rail_busbw[sim-gpu-02]",
               "test_fabric_rail_busbw[sim-gpu-03]",
               "test_collective_transport[all_reduce-4nodes]"}
    result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=len(every) - len(failing), failed=len(failing))
    found = failures(pytester)
    assert set(found) == failing
    # NCCL bound to one HCA port per job: sim-gpu-03's slow port named, sim-gpu-02's
    # rail that is down not measured (not run: the NIC probe saw it down)
    assert "slow rail mlx5_5/1 " in found["test_fabric_rail_busbw[sim-gpu-03]"]
    assert found["test_fabric_rail_busbw[sim-gpu-02]"] == (
        "[SIMULATED] sim-gpu-02 rail_busbw: cannot measure: mlx5_3/1: port mlx5_3/1 on "
        "sim-gpu-02 is down (DOWN, Disabled), seen by the NIC probe at the run's start "
        "(fabric.ports): not run on it")
    assert re.fullmatch(
        r"\[SIMULATED\] sim-gpu-02 symbol_errors: measured \d+ /h > allowed 10 /h; 1 of 8 "
        r"port\(s\) above it: mlx5_6/1: 5000 in [\d.]+ s",
        found["test_fabric_symbol_errors[sim-gpu-02]"]), found
    symbols = [r for r in jsonl(pytester) if "test_fabric_symbol_errors" in r.get("case", "")]
    assert all(r["unit"] == "/h" for r in symbols) and len(symbols) == 4
    assert [r["measured"] for r in symbols if r["node"] != "sim-gpu-02"] == [0, 0, 0]
    # NCCL fell back to sockets on one node and lost GPUDirect on another: named by rank
    # and node; the job's busbw, held back by sim-gpu-02's port down (7 of 8) and
    # sim-gpu-03's at half rate, fails too
    assert found["test_collective_transport[all_reduce-4nodes]"] == (
        "[SIMULATED] 4 nodes (sim-gpu-01..sim-gpu-04) transport: NCCL used inter_node ib, "
        "gdr true, nvls true promised; inter_node socket on ranks 16-23 (sim-gpu-03); gdr "
        "false on ranks 16-31 (sim-gpu-[03-04])")
    busbw = [r for r in jsonl(pytester) if "test_collective_inter_node" in r.get("case", "")]
    assert [r["outcome"] for r in busbw] == ["failed"]
    assert 0.9 * 320 < busbw[0]["measured"] < 320  # GB/s, of 8 x 400 Gb/s
    # a job's number names no node, and here no search does: the message says so
    assert busbw[0]["message"].endswith("; the node that holds it back is not looked for "
                                        "(interconnect.node_network: false; true pairs the "
                                        "nodes to name it)"), busbw[0]["message"]
    assert busbw[0]["transport"] == ("inter_node ib (ranks 0-15,24-31), socket (ranks 16-23); "
                                     "gdr false (ranks 16-31), true (ranks 0-15); nvls true "
                                     "(ranks 0-31)")
    assert found["test_fabric_counters[sim-gpu-01]"] == (
        "[SIMULATED] sim-gpu-01 counters: during the run: mlx5_2/1: link_downed 0 -> 2")
    cases = [r["case"] for r in jsonl(pytester) if r.get("type") == "result"]
    assert all("test_fabric_counters" in case or "test_fabric_symbol_errors" in case
               for case in cases[-8:]), cases[-8:]
    assert found["test_fabric_ports[sim-gpu-02]"] == (
        "[SIMULATED] sim-gpu-02 ports: measured 7 < required 8 (87.5% of required); not "
        "active: mlx5_3/1 (DOWN, Disabled)")
    assert found["test_fabric_rate[sim-gpu-03]"] == (
        "[SIMULATED] sim-gpu-03 rate: measured 200 Gb/s < required 400 Gb/s (50% of "
        "required); 1 of 8 port(s) below it: mlx5_5/1 at 200 Gb/s")
    assert found["test_fabric_same_firmware"] == (
        "[SIMULATED] NIC firmware differs between nodes: 28.39.1002 (mlx5_[0-7]) on "
        "sim-gpu-01, sim-gpu-02, sim-gpu-03; 28.36.1010 (mlx5_0), 28.39.1002 (mlx5_[1-7]) "
        "on sim-gpu-04")
    verdict = json.loads((pytester.path / "reports" / "latest" / "verdict.json").read_text())
    failed = {n["node"]: n["failed_clauses"] for n in verdict["nodes"]}
    assert "fabric.ports" in failed["sim-gpu-02"]
    # the culprits the cluster checks name fail with them; no other node is blamed
    blamed = {clause: sorted(node for node, clauses in failed.items() if clause in clauses)
              for clause in ("fabric.same_firmware", "interconnect.transport")}
    assert blamed == {"fabric.same_firmware": ["sim-gpu-04"],
                      "interconnect.transport": ["sim-gpu-03", "sim-gpu-04"]}
    assert {n["node"]: n["verdict"] for n in verdict["nodes"]}["sim-gpu-04"] == "REJECTED"
    assert {c["clause"]: c.get("culprits") for c in verdict["cluster_checks_failed"]} == {
        "fabric.same_firmware": "sim-gpu-04", "interconnect.transport": "sim-gpu-[03-04]",
        "interconnect.busbw[inter_node]": None}  # no search here (node_network: false)


def test_pcie_is_promised_with_the_section_unless_false() -> None:
    rule = fabric_of("fabric: {ports: 8}\n").rule("pcie")
    assert rule is not None and rule.line == 0
    assert rule.text == "every counted port's NIC at its maximum PCIe generation and width"
    assert fabric_of("fabric:\n  ports: 8\n  pcie: false\n").rule("pcie") is None
    written = fabric_of("fabric:\n  ports: 8\n  pcie: max\n").rule("pcie")
    assert written is not None and written.line == 5
    with pytest.raises(SpecError, match=r"fabric\.pcie: expected true or 'max' \(the "
                                        r"default\), or false to leave it out, got 'x8'"):
        fabric_of("fabric:\n  pcie: x8\n")


PCIE = """\
cluster: {name: pcie, nodes: "n[1-4]", launcher: sim}
fabric: {ports: 8}
sim:
  faults:
    - {node: n2, nic: 4, nic_pcie_width: 8}
    - {node: n3, nic: 6, nic_pcie_gen: 4}
    - {node: n3, nic: 1, nic_pcie_width: 4, nic_pcie_gen: 3}
"""


def test_a_nic_below_its_pcie_link_fails_its_node_naming_the_port(
        pytester: pytest.Pytester) -> None:
    """A card at x8 of x16, one in a Gen4 slot, one at both: each named with what its link
    runs at and what it can do; the other nodes' links pass; the node is rejected for the
    provider's hardware team, with the action."""
    (pytester.path / "trial.yaml").write_text(PCIE)
    every = planned(pytester, PCIE)
    failing = {f"test_fabric_pcie[{node}]" for node in faulted(PCIE, "nic")}
    result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=len(every) - len(failing), failed=len(failing))
    found = failures(pytester)
    assert found == {
        "test_fabric_pcie[n2]": "[SIMULATED] n2 pcie: 1 of 8 NIC(s) below their maximum "
                                "PCIe link: mlx5_4/1 PCIe Gen5 x8, can do Gen5 x16",
        "test_fabric_pcie[n3]": "[SIMULATED] n3 pcie: 2 of 8 NIC(s) below their maximum "
                                "PCIe link: mlx5_1/1 PCIe Gen3 x4, can do Gen5 x16; "
                                "mlx5_6/1 PCIe Gen4 x16, can do Gen5 x16"}
    passed = [r for r in jsonl(pytester) if r.get("clause") == "fabric.pcie"
              and r.get("outcome") == "passed"]
    assert sorted(r["node"] for r in passed) == ["n1", "n4"]
    assert {r["measured"] for r in passed} == {"Gen5 x16 of Gen5 x16 (mlx5_[0-7])"}
    verdict = json.loads((pytester.path / "reports" / "latest" / "verdict.json").read_text())
    rejected = {n["node"]: n for n in verdict["nodes"] if n["verdict"] == REJECTED}
    assert sorted(rejected) == ["n2", "n3"]
    assert all(n["failed_clauses"] == ["fabric.pcie"] for n in rejected.values())
    faults = [r for r in jsonl(pytester) if r.get("code") == "PC-NET-PCIE"]
    assert {(r["node"], r["actor"]) for r in faults} == {("n2", "provider-hardware"),
                                                         ("n3", "provider-hardware")}


#: Makes the simulated node n2's mlx5_3 a card whose link the kernel cannot tell, and
#: n3's mlx5_5 a port with no PCI Express device (its link files gone).
UNREADABLE_LINK = """\
import pytest_cluster.sim.nics as nics

_tree = nics.tree


def odd(sim, node, ic, when=None):
    files = _tree(sim, node, ic, when)
    card = f"{nics.ROOT}/class/infiniband/mlx5_3/device"
    if node == "n2":
        files[f"{card}/current_link_speed"] = "Unknown"
        files[f"{card}/current_link_width"] = "0"
    if node == "n3":
        gone = f"{nics.ROOT}/class/infiniband/mlx5_5/device/"
        for path in [p for p in files if p.startswith(gone) and "link_" in p]:
            del files[path]
    return files


def pytest_configure(config):
    nics.tree = odd


def pytest_unconfigure(config):
    nics.tree = _tree
"""


def test_a_nic_link_not_read_cannot_be_measured_never_passes(
        pytester: pytest.Pytester) -> None:
    text = "\n".join(line for line in PCIE.splitlines() if "n3, nic: 6" in line
                     or "nic_pcie" not in line) + "\n"  # n3's Gen4 card alone
    (pytester.path / "trial.yaml").write_text(text)
    pytester.makeconftest(UNREADABLE_LINK)
    pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider", "-k", "pcie")
    found = failures(pytester)
    card = "/sim/sys/class/infiniband/mlx5_3/device"
    assert found == {
        "test_fabric_pcie[n2]": (
            f"[SIMULATED] n2 pcie: cannot measure: mlx5_3/1: no PCIe gen, width "
            f"({card}/current_link_speed: 'Unknown': the kernel cannot tell the link's speed "
            f"(no link trained, or a virtual function's link); {card}/current_link_width: 0 "
            "lanes: no link trained (or a virtual function's link))"),
        # n3's mlx5_6 is below its maximum: a finding, with the port not read beside it
        "test_fabric_pcie[n3]": (
            "[SIMULATED] n3 pcie: 1 of 8 NIC(s) below their maximum PCIe link: mlx5_6/1 "
            "PCIe Gen4 x16, can do Gen5 x16; not read: mlx5_5/1: no PCI Express device (a "
            "virtual port has none)")}
    records = {r["node"]: r for r in jsonl(pytester) if r.get("clause") == "fabric.pcie"}
    assert records["n2"]["error_kind"] == "cannot_measure"
    assert records["n3"].get("error_kind") is None


def test_the_fleet_example_rejects_gpu_005_for_its_nic_at_x8(
        pytester: pytest.Pytester) -> None:
    """examples/sim-h100-fleet-faulty.yaml: gpu-005's mlx5_4 trained at x8 fails
    fabric.pcie there, naming the port and both links; no other node's fabric.pcie fails,
    and the healthy gpu-006 is accepted."""
    text = (EXAMPLES / "sim-h100-fleet-faulty.yaml").read_text()
    (pytester.path / "fleet.yaml").write_text(text)
    pytester.runpytest("--cluster=fleet.yaml", "-p", "no:cacheprovider")
    found = {case: message for case, message in failures(pytester).items()
             if case.startswith("test_fabric_pcie")}
    assert list(faulted(text, "nic_pcie_width")) == ["gpu-005"]
    assert found == {"test_fabric_pcie[gpu-005]": (
        "[SIMULATED] gpu-005 pcie: 1 of 8 NIC(s) below their maximum PCIe link: mlx5_4/1 "
        "PCIe Gen5 x8, can do Gen5 x16")}
    verdict = json.loads((pytester.path / "reports" / "latest" / "verdict.json").read_text())
    nodes = {n["node"]: n for n in verdict["nodes"]}
    assert nodes["gpu-005"]["verdict"] == REJECTED
    assert "fabric.pcie" in nodes["gpu-005"]["failed_clauses"]
    assert nodes["gpu-006"]["verdict"] == "ACCEPTED"


def test_the_fabric_is_checked_at_the_sanity_level(pytester: pytest.Pytester) -> None:
    """State, rate and count need no load: `-m sanity` checks every fabric clause."""
    (pytester.path / "trial.yaml").write_text(
        (EXAMPLES / "sim-h100-fabric-faulty.yaml").read_text())
    sanity = planned(pytester, (pytester.path / "trial.yaml").read_text(), "-m", "sanity")
    result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                                "-m", "sanity")
    failing = {"test_fabric_ports[sim-gpu-02]", "test_fabric_rate[sim-gpu-03]",
               "test_fabric_same_firmware"}
    assert set(failures(pytester)) == failing
    result.assert_outcomes(passed=len(sanity) - len(failing), failed=len(failing))
    # the counters, read across the run: not at this level
    assert not any("counters" in r.get("case", "") for r in jsonl(pytester)
                   if r.get("type") == "result" and r.get("outcome") != "not_run")


def test_a_port_the_spec_names_that_no_node_has_cannot_be_measured(
        pytester: pytest.Pytester) -> None:
    text = ("cluster: {name: c, nodes: [a], launcher: sim}\nsim: {}\n"
            "fabric: {devices: 'bnxt_re*', ports: 1}\n")
    (pytester.path / "trial.yaml").write_text(text)
    result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider")
    # every case reads the ports (ports, and counters: on by default)
    result.assert_outcomes(failed=len(planned(pytester, text)))
    message = failures(pytester)["test_fabric_ports[a]"]
    assert message.startswith("[SIMULATED] a ports: cannot measure: no port among the ports "
                              "matching 'bnxt_re*' (the node has: mlx5_0/1, mlx5_1/1,")
    assert message.endswith("mlx5_7/1 and 9 more)")


# -- the real thing: the kernel's sysfs inside network namespaces, over ssh ---------------


def _ip(netns: NetnsCluster, node: str, *args: str) -> None:
    subprocess.run(["ip", "-n", netns.netns(node), *args], check=True, timeout=30)


#: The rail search's jobs' timeout in the real tests: a port down must not cost it twice.
RAIL_TIMEOUT_S = 40


@pytest.mark.parametrize(("body", "message"), [
    ("transport: {inter_node: infiniband}",
     "interconnect.transport.inter_node: expected ib or socket (the network NCCL uses "
     "between nodes), got 'infiniband'"),
    ("transport: {gdr: yes please}", "interconnect.transport.gdr:"),
    ("transport: {}", "interconnect.transport: promises nothing: give inter_node, gdr, nvls"),
    ("transport: {inter_node: ib, nvl: true}", "interconnect.transport.nvl: unknown key"),
])
def test_a_bad_transport_promise_is_a_usage_error(body: str, message: str) -> None:
    with pytest.raises(SpecError) as caught:
        parse_spec(HEAD + "interconnect:\n  busbw: '>= 10 GB/s'\n  payloads: [1 GiB]\n"
                   "  backend: nccl\n  ranks_per_node: 8\n  " + body + "\n", "t.yaml")
    assert message in str(caught.value)


def test_the_transport_needs_nccl() -> None:
    with pytest.raises(SpecError) as caught:
        parse_spec(HEAD + "interconnect:\n  busbw: '>= 1 GB/s'\n  payloads: [1 MiB]\n"
                   "  backend: gloo\n  transport: {inter_node: socket}\n", "t.yaml")
    assert "interconnect.transport: the transport NCCL used: needs backend nccl" in \
        str(caught.value)


def test_a_transport_promise_parses() -> None:
    spec = parse_spec(HEAD + "interconnect:\n  busbw: '>= 10 GB/s'\n  payloads: [1 GiB]\n"
                      "  backend: nccl\n  ranks_per_node: 8\n"
                      "  transport: {inter_node: ib, gdr: true}\n", "t.yaml")
    assert spec.interconnect is not None and spec.interconnect.transport is not None
    transport = spec.interconnect.transport
    assert (transport.inter_node, transport.gdr, transport.nvls, transport.line) == (
        "ib", True, None, 8)
    assert transport.text == "NCCL used inter_node ib, gdr true"


@pytest.mark.parametrize(("payload", "message"), [
    ({"sysfs": "/sys"}, "the NIC probe's answer has no list of ports"),
    ({"ports": "mlx5_0"}, "the NIC probe's answer has no list of ports"),
    ({"ports": [{"name": "eth0"}, 7]}, "the NIC probe's port 1 is not a map with a name"),
    ({"ports": [{"name": ["x"]}]}, "the NIC probe's port 0 is not a map with a name"),
    ({"ports": [{"name": "e", "counters": []}]}, "port 0 is not a map with a name"),
    ({"ports": [{"name": "e"}] * 5000}, "lists 5000 ports (at most 4096)"),
    ({"ports": [{"name": "e"}] * 1024, "ports_left_out": 98977},
     "the NIC probe read 1024 ports and left out 98977 more"),
])
def test_a_malformed_nic_answer_is_refused_saying_what_is_wrong(payload: Any,
                                                                message: str) -> None:
    """A node's answer is untrusted: whatever it prints, the fabric checks, the inventory
    and the soak say what is wrong with it, never a traceback."""
    from pytest_cluster.launchers.result import ProbeResult
    from pytest_cluster.measure.inventory import node_record

    with pytest.raises(ValueError, match=re.escape(message)):
        fabric.ports_of(payload)
    host = ProbeResult("n1", "host", {"hostname": "n1", "versions": {}})
    nic = ProbeResult("n1", "nic", payload)
    record = node_record(host, None, None, None, with_gpus=False, nic=nic)
    said = cast("Unreadable", record["interfaces"])["unreadable"]
    assert record["infiniband"] == {"unreadable": said}
    assert said.startswith("the NIC probe's answer: ") and message in said


#: A stand-in for ib_write_bw (no RDMA here): as a server (no host after -p) it marks that it
#: listens, waits for its client's mark, and exits; as a client it fails as perftest does
#: until its server listens, then prints perftest's table (linux-rdma/perftest#273's
#: format) at a rate that tells the client apart. It tests the rank program's turn-taking.
IB_WRITE_BW = """\
#!/bin/sh
for last; do :; done
port=$(echo "$@" | sed 's/.*-p \\([0-9]*\\).*/\\1/')
if [ "$last" = "$port" ]; then
  touch "$MARKS/listen-$port"
  while [ ! -e "$MARKS/done-$port" ]; do sleep 0.05; done
  exit 0
fi
if [ ! -e "$MARKS/listen-$port" ]; then echo "Couldn't connect to $last:$port" >&2; exit 1; fi
echo " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]"
echo " 1048576    5000             0.00               $((port % 100)).50   \t\t   0.011"
touch "$MARKS/done-$port"
"""


@pytest.mark.slow
def test_the_perftest_rank_program_serves_each_client_in_turn(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_cluster.launchers.jobs import JobSpec, run_job
    from pytest_cluster.measure.network import perftest
    from pytest_cluster.probes.jobs import job_source
    from tests.launchers.test_jobs import local

    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "ib_write_bw").write_text(IB_WRITE_BW)
    (tools / "ib_write_bw").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tools}:{os.environ['PATH']}")
    monkeypatch.setenv("MARKS", str(tmp_path))
    base = perftest.command("ib_write_bw", "mlx5_0", 1, seconds=1)
    launcher = local()
    launcher.spec = type(launcher.spec)("t", ("a", "b", "c"), "local", sys.executable, 60, 8)
    result = run_job(launcher, JobSpec(("a", "b", "c"), job_source("perftest"),
                                       args=("--argv", json.dumps(base), "--seconds", "1"),
                                       init_timeout_s=20, wall_timeout_s=60, master_port=29810))
    assert result.ok, result.first_failure()
    server, *clients = [r.data for r in result.ranks]
    assert server is not None and server["role"] == "server" and server["clients"] == 2
    assert [c["argv"][-3:] for c in clients if c] == [["-p", "29811", "127.0.0.1"],
                                                      ["-p", "29812", "127.0.0.1"]]
    rate, why = perftest.group_rate([c for c in clients if c])
    assert (rate, why) == (11.5 * 125_000_000, "")  # the slower client: port 29811

"""Real components (network namespaces with sshd, SLURM) for tests/contract/sections/test_fabric.py:
the same checks on real parts; its unit tests stay there."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import has_torch, on, planned
from tests.contract.sections.test_fabric import RAIL_TIMEOUT_S, _ip, failures, one_rail_failure
from tests.netns_cluster import NetnsCluster
from tests.test_plugin import jsonl


@pytest.mark.realcomponents
def test_real_ports_are_read_on_each_node_and_the_faulty_one_named(
        pytester: pytest.Pytester, netns: NetnsCluster) -> None:
    """Every node gets a second interface, `rail1` (a veth whose peer stays in the node,
    MTU 9000), up; on node3 it is down and on node4 its MTU is 1500. The NIC probe reads
    each node's own /sys over ssh: node3 fails ports naming rail1, node4 fails mtu naming
    rail1, and the others pass."""
    for node in netns.nodes:
        _ip(netns, node, "link", "add", "rail1", "type", "veth", "peer", "name", "peer1")
        mtu = "1500" if node == "node4" else "9000"
        for end in ("rail1", "peer1"):
            _ip(netns, node, "link", "set", end, "mtu", mtu)
        _ip(netns, node, "link", "set", "peer1", "up")
        if node != "node3":
            _ip(netns, node, "link", "set", "rail1", "up")
    try:
        text = (f"cluster:\n  name: netns\n  nodes: node[1-4]\n  launcher: ssh\n"
                f"  python: {sys.executable}\n  probe_timeout: 1 min\n"
                f"{netns.launcher_section('ssh')}\n"
                "fabric:\n  devices: 'rail*'\n  ports: 1\n  link_layer: Ethernet\n"
                "  mtu: 9000\n")
        (pytester.path / "trial.yaml").write_text(text)
        result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider")
        found = failures(pytester)
        # node3's port down, node4's MTU, the firmware and PCIe link no veth has (the
        # scenario's);
        # every other case of the spec passes
        cases = planned(pytester, text)
        result.assert_outcomes(passed=len(cases) - len(found), failed=len(found))
        assert found == {
            "test_fabric_ports[node3]": "node3 ports: measured 0 < required 1 (0% of "
                                        "required); not active: rail1 (down)",
            "test_fabric_mtu[node4]": "node4 mtu: measured 1500 < required 9000 (16.67% of "
                                      "required); below it: rail1 (1500)",
            # a veth has no firmware: nothing to compare is never a pass
            "test_fabric_same_firmware": "all same_firmware: cannot measure: no counted port "
                                         "reports a firmware version on node[1-4] (a "
                                         "virtual NIC has none)",
            # nor a PCI device: its node is not checked (never passed, never rejected)
            **{f"test_fabric_pcie[{node}]": f"{node} pcie: not checked: rail1 has no PCI "
               "device (a virtual interface: a veth, a bond, a VLAN): no PCIe link of its "
               "own (write fabric.pcie: false for virtual interfaces)"
               for node in netns.nodes},
        }
    finally:
        for node in netns.nodes:
            subprocess.run(["ip", "-n", netns.netns(node), "link", "del", "rail1"],
                           check=False, timeout=30)


@pytest.mark.realcomponents
def test_real_rails_each_alone_name_the_slow_rail_of_the_slow_node(
        pytester: pytest.Pytester, netns: NetnsCluster) -> None:
    """Two rails beside eth0 on every node (rail1, rail2: a bridge each), rail2 of node3
    shaped to 200 Mbit/s. Gloo all_reduce over ssh bound to one rail at a time
    (GLOO_SOCKET_IFNAME): node3 fails naming rail2, and no other node or rail fails (its
    partners are cleared by their other pairs)."""
    if not has_torch():
        pytest.skip("torch is not installed")
    for number in (1, 2):
        netns.add_rail(number)
    netns.shape("node3", "200mbit", rail=2)
    try:
        (pytester.path / "trial.yaml").write_text(
            f"cluster:\n  name: rails\n  nodes: node[1-4]\n  launcher: ssh\n"
            f"  python: {sys.executable}\n  probe_timeout: 1 min\n"
            f"{netns.launcher_section('ssh')}\n"
            "fabric: {devices: 'rail*', rail_busbw: 60 MB/s}\n"
            "interconnect:\n  inter_node: {kind: veth, nics_per_node: 2, rate_per_nic: "
            "1 Gb/s}\n  payloads: [16 MiB]\n  busbw: '>= 1 MB/s'\n  node_network: false\n"
            "  warmup: 2\n  iterations: 5\n  timeout: 2 min\n")
        message = one_rail_failure(pytester, "node3")  # its rail2 shaped: the scenario's
        assert re.fullmatch(
            r"node3 rail_busbw: measured (\d+(\.\d+)?) MB/s < required 60 MB/s \([\d.]+% of "
            r"required\); slow rail rail2 \1 MB/s with node\d \(round 2 of 2; node\d reached "
            r"the bar on rail2 with other nodes\)", message), message
        measured = float(message.split("measured ")[1].split(" ")[0])
        assert 15 < measured < 26  # 200 Mbit/s is 25 MB/s: the shaped rail's own rate
        lines = {r["node"]: r for r in jsonl(pytester) if r.get("clause") == "fabric.rail_busbw"}
        assert lines["node3"]["raw"]["rail1"]["status"] == "ok"
        assert lines["node3"]["raw"]["rail2"]["env"] == [["GLOO_SOCKET_IFNAME", "rail2"]]
        assert all(lines[n]["raw"]["rail2"]["busbw"] > 60e6 for n in ("node1", "node2", "node4"))
    finally:
        for number in (1, 2):
            netns.remove_rail(number)


@pytest.mark.realcomponents
def test_over_slurm_each_node_judges_its_own_nics_never_the_hosts(
        pytester: pytest.Pytester, slurm: NetnsCluster) -> None:
    """Each slurmd here enters its node's network namespace with `nsenter --net` and, as on
    a real node, sees that namespace's devices in /sys (netns_cluster binds them there):
    its jobs' NIC probe passes its own check and reads the node's eth0 alone, never one of
    this machine's interfaces. (A process that sees another namespace's /sys is refused:
    probes/test_nic.py enters with nsenter --net and unshare --net without that.)"""
    host = {entry.name for entry in Path("/sys/class/net").iterdir() if entry.is_dir()}
    text = (f"cluster:\n  name: nsenter\n  nodes: node[1-4]\n  launcher: slurm\n"
            f"  python: {sys.executable}\n  probe_timeout: 1 min\n"
            "slurm:\n  time_limit: 5 min\n"
            "fabric: {devices: 'eth*', ports: 1}\n")
    (pytester.path / "trial.yaml").write_text(text)
    result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                                "-k", "ports")
    result.assert_outcomes(passed=len(planned(pytester, text, "-k", "ports")))
    seen = {r["node"]: json.dumps(r.get("raw")) for r in jsonl(pytester)
            if r.get("clause") == "fabric.ports"}
    assert sorted(seen) == sorted(slurm.nodes)
    for raw in seen.values():
        assert "eth0" in raw, raw
        assert not [name for name in host - {"eth0", "lo"} if f'"{name}' in raw], raw


@pytest.mark.realcomponents
def test_a_rail_seen_down_is_not_run_again_and_costs_no_timeout(
        pytester: pytest.Pytester, netns: NetnsCluster) -> None:
    """Two rails on every node, node2's rail2 down. The NIC probe at the run's start sees
    it (fabric.ports fails node2 naming rail2); the rail search leaves node2 out of rail2's
    search, saying why once, and runs no job on that port: the whole run takes less than
    two of the jobs' timeouts (before, every round that paired node2 on rail2 waited one
    out). node2's other rail and every other node pass: no healthy node is blamed."""
    if not has_torch():
        pytest.skip("torch is not installed")
    for number in (1, 2):
        netns.add_rail(number)
    _ip(netns, "node2", "link", "set", "rail2", "down")
    try:
        text = (f"cluster:\n  name: rails\n  nodes: node[1-4]\n  launcher: ssh\n"
                f"  python: {sys.executable}\n  probe_timeout: 1 min\n"
                f"{netns.launcher_section('ssh')}\n"
                "fabric: {devices: 'rail*', ports: 2, rail_busbw: 60 MB/s}\n"
                "interconnect:\n  inter_node: {kind: veth, nics_per_node: 2, rate_per_nic: "
                "1 Gb/s}\n  payloads: [16 MiB]\n  busbw: '>= 1 MB/s'\n  node_network: false\n"
                f"  warmup: 2\n  iterations: 5\n  timeout: {RAIL_TIMEOUT_S} s\n")
        (pytester.path / "trial.yaml").write_text(text)
        started = time.monotonic()
        result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                                    "-k", "rail_busbw or ports")
        took = time.monotonic() - started
        cases = planned(pytester, text, "-k", "rail_busbw or ports")
        down = on(cases, "node2")  # its rail2 down: the scenario's
        result.assert_outcomes(passed=len(cases) - len(down), failed=len(down))
        assert failures(pytester) == {
            "test_fabric_ports[node2]": "node2 ports: measured 1 < required 2 (50% of "
                                        "required); not active: rail2 (down)",
            "test_fabric_rail_busbw[node2]": "node2 rail_busbw: cannot measure: rail2: port "
                                             "rail2 on node2 is down (down), seen by the NIC "
                                             "probe at the run's start (fabric.ports): not "
                                             "run on it",
        }
        lines = {r["node"]: r for r in jsonl(pytester)
                 if r.get("clause") == "fabric.rail_busbw"}
        assert lines["node2"]["raw"]["rail1"]["status"] == "ok"
        assert lines["node2"]["raw"]["rail2"]["status"] == "not_searched"
        print(f"the run with node2's rail2 down took {took:.1f} s")
        assert took < 2 * RAIL_TIMEOUT_S, took
    finally:
        for number in (1, 2):
            netns.remove_rail(number)


"""This run's nodes and machines against the baseline's, each change named."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

from pytest_cluster.contract import parse_spec
from pytest_cluster.contract.narrow import narrow
from pytest_cluster.evidence.baseline.accepted import Baseline
from pytest_cluster.evidence.baseline.hardware import hardware_changes, same_hardware, same_nodes
from pytest_cluster.measure.inventory_file import GpuRecord, InventoryDocument, NodeRecord

GPU: GpuRecord = {"index": 6, "serial": "1650001", "uuid": "GPU-a", "board_part": "692",
                  "vbios": "96.1", "pci_bus_id": "0:ba"}


def _baseline(nodes: dict[str, Any]) -> Baseline:
    return Baseline(Path("b"), "2026-11-02", (), "0" * 64, {"nodes": nodes}, {})


NODE: NodeRecord = {
    "dmi": {"product_serial": "S1", "product_uuid": "U1"}, "machine_id": "m1",
    "gpus": [GPU], "software": {"driver": "550.90.07"},
    "interfaces": [{"name": "eno1", "address": "aa:bb", "firmware": "22.39",
                    "rate_gbps": 25.0, "link_layer": "ethernet"}],
    "infiniband": [{"name": "mlx5_0", "node_guid": "g0", "firmware": "28.39",
                    "ports": [{"port": "1", "rate": "400 Gb/sec (4X NDR)"}]}],
    "filesystems": [{"path": "/data", "block_devices": [{"name": "nvme0n1",
                                                         "serial": "D1", "model": "X"}]}]}


def test_hardware_changes_name_both_sides() -> None:
    assert hardware_changes(NODE, json.loads(json.dumps(NODE))) == []
    now = json.loads(json.dumps(NODE))
    now["gpus"][0].update(serial="1650002", uuid="GPU-b")
    now["interfaces"][0]["firmware"] = "22.41"
    now["infiniband"][0]["ports"][0]["rate"] = "200 Gb/sec (4X HDR)"
    now["software"]["driver"] = "560.35.03"
    now["filesystems"][0]["block_devices"] = []
    assert hardware_changes(NODE, now) == [
        "gpu6 swapped: serial 1650001 (GPU-a) at baseline, now serial 1650002 (GPU-b)",
        "NIC eno1 firmware 22.39 at baseline, now 22.41",
        "HCA mlx5_0 rate port 1 400 Gb/sec (4X NDR) at baseline, now port 1 200 Gb/sec "
        "(4X HDR)",
        "disk under /data nvme0n1 missing (was D1, X)",
        "driver 550.90.07 at baseline, now 560.35.03"]
    gone: NodeRecord = {**NODE, "gpus": {"unreadable": "NVML not available"}}
    assert hardware_changes(NODE, gone) == ["GPUs unreadable now (unreadable (NVML not "
                                            "available))"]
    assert hardware_changes(NODE, {"unreadable": "n1: ssh: connection refused"}) == [
        "no inventory this run: n1: ssh: connection refused"]
    # unreadable at baseline: nothing to compare it with, so no change is claimed
    assert hardware_changes({**NODE, "dmi": {"unreadable": "root only"}},
                            {**NODE, "dmi": {"product_serial": "S9"}}) == []


def test_what_a_terminal_would_act_on_is_escaped_in_a_change() -> None:
    """A hostile baseline's serial that clears the screen, or a node name with a bidi
    override, is shown escaped; printable text (accents too) is kept as it is."""
    before = json.loads(json.dumps(NODE))
    before["gpus"][0]["serial"] = "\x1b[2J\x1b[Hall good\u202e"
    before["software"]["driver"] = "550 é"
    assert hardware_changes(before, NODE) == [
        "gpu6 swapped: serial \\x1b[2J\\x1b[Hall good\\u202e (GPU-a) at baseline, now serial "
        "1650001 (GPU-a)",
        "driver 550 é at baseline, now 550.90.07"]
    case = same_nodes(_baseline({"n1": NODE, "n\x1b[31m2": NODE}), {"nodes": {"n1": NODE}})
    assert case.message.endswith("1 missing since the baseline: n\\x1b[31m2")


def test_missing_and_new_nodes_are_named() -> None:
    case = same_nodes(_baseline({"n1": NODE, "n2": NODE}), {"nodes": {"n1": NODE, "n3": NODE}})
    assert not case.passed
    assert case.message == ("nodes differ from the baseline (run 2026-11-02): 1 missing since "
                            "the baseline: n2; 1 new: n3")
    assert same_nodes(_baseline({"n1": NODE}), {"nodes": {"n1": NODE}}).passed


def test_a_run_of_some_nodes_misses_none_it_was_not_asked_to_check() -> None:
    """A run of some of the spec's nodes (--cluster-node, a SLURM prolog's this host) is
    compared on those alone: the baseline's others are named as left out, not missing
    (before, a run of one node of an accepted four failed baseline.nodes: 3 missing)."""
    whole = parse_spec("cluster: {name: c, nodes: 'n[1-4]', launcher: ssh}\n"
                       "host: {cpu_cores: '>= 1'}\n", "s.yaml")
    four = _baseline({node: NODE for node in whole.cluster.nodes})
    one = narrow(whole, ["n1"]).cluster
    case = same_nodes(four, {"nodes": {"n1": NODE}}, one)
    assert case.passed, case.message
    assert case.props["measured"] == ("1 node(s), 4 at baseline; 3 left out by the node "
                                      "selection: n2, n3, n4")
    assert case.props["not_checked"] == ["n2", "n3", "n4"]
    assert case.props["requirement"] == "the nodes of the baseline that this run checks"
    # a node the run was asked to check and did not report is still missing
    lost = same_nodes(four, {"nodes": {}}, one)
    assert lost.message == ("nodes differ from the baseline (run 2026-11-02): 1 missing "
                            "since the baseline: n1")
    # a run of every node: a baseline node gone from the spec is missing, as before
    assert not same_nodes(four, {"nodes": {"n1": NODE}}, whole.cluster).passed
    # a selection that kept checks of n1 alone (-k n1): the same, every node's inventory
    # taken or not
    every: InventoryDocument = cast("InventoryDocument", {
        "nodes": {node: NODE for node in whole.cluster.nodes}})
    one_taken: InventoryDocument = cast("InventoryDocument", {"nodes": {"n1": NODE}})
    for taken in (every, one_taken):
        kept = same_nodes(four, taken, whole.cluster, frozenset({"n1"}))
        assert kept.passed, kept.message
        assert kept.props["not_checked"] == ["n2", "n3", "n4"]
    assert [case.node for case in same_hardware(four, every, {"n1"})] == ["n1"]


def test_a_node_of_thousands_of_changes_names_twenty_and_counts_the_rest() -> None:
    """A baseline within its bounds (4,096 NICs a node) costs a run no more output than a
    fresh run's: its hardware case names MAX_NAMED changes and counts the rest (before,
    every change was named, in every report)."""
    many = {**NODE, "interfaces": [{"name": f"veth{i}", "address": "aa"} for i in range(4096)]}
    case = same_hardware(_baseline({"n1": many}), {"nodes": {"n1": NODE}})[0]
    assert not case.passed
    assert case.message.count("missing") == 20
    assert "; and 4077 more change(s) (run 2026-11-02)" in case.message
    assert len(case.message) < 2000
    assert len(case.props["changes"]) == 21

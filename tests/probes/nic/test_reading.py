"""probes/nic/reading.py: the whole reading of a tree, and the document printed, bounded."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_cluster.probes import nic
from tests.probes.test_nic import tree


def test_only_the_directories_of_class_net_are_interfaces(tmp_path: Path) -> None:
    """bonding_masters is a file of /sys/class/net, not an interface."""
    root = tree(tmp_path)
    (root / "class/net/bonding_masters").write_text("\n")
    reader = nic.Reader(str(root))
    assert reader.directories(reader.path("class", "net")) == ["eth0", "eth2", "lo", "veth1"]
    own = ["eth0", "eth2", "lo", "veth1"]
    assert "ports" in nic.read_ports(reader, ethtool=False, namespace=lambda: own)
    other = nic.read_ports(reader, ethtool=False, namespace=lambda: ["lo"])
    assert "ports" not in other
    assert other["error"] == nic.namespace_mismatch(own, ["lo"])
    assert other["interfaces"] == {"sysfs": own, "namespace": ["lo"]}


def test_the_document_printed_is_bounded() -> None:
    ports: list[nic.Port] = [{"name": f"p{i}", "unreadable": {"x" * 1000: "y"}}
                             for i in range(5000)]
    document: nic.Document = {"probe": "nic", "schema": 1,
                              "data": {"ports": ports, "ports_left_out": 7}}
    text = nic.bounded(document)
    assert len(text) <= nic.MAX_OUTPUT
    data = json.loads(text)["data"]
    kept = len(data["ports"])
    assert 1000 < kept < 5000
    assert data["ports_left_out"] == 7 + 5000 - kept
    assert data["output_cut"] == f"{5000 - kept} port(s) left out: more than " \
                                 f"{nic.MAX_OUTPUT} bytes of output"
    small: nic.Document = {"probe": "nic", "schema": 1,
                           "data": {"ports": ports[:3], "ports_left_out": 0}}
    assert nic.bounded(small) == json.dumps(small)

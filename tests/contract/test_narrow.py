"""contract/narrow.py: a run of some nodes (--cluster-node): how many one run takes, which
names this host has, and the spec those nodes are checked against. (Which nodes a value
names, and what a narrowed spec promises: tests/run/test_one_node.py.)"""

from __future__ import annotations

import socket

import pytest

from pytest_cluster.contract.loader import parse_spec
from pytest_cluster.contract.narrow import MAX_RUN_NODES, narrow, run_size, this_host
from pytest_cluster.hostlist import compress_hostlist


def test_one_run_takes_at_most_max_run_nodes_and_names_the_first_part() -> None:
    nodes = [f"n{i:05d}" for i in range(1, MAX_RUN_NODES + 2)]
    run_size(nodes[:MAX_RUN_NODES])  # no error
    with pytest.raises(ValueError) as caught:
        run_size(nodes)
    first = compress_hostlist(nodes[:MAX_RUN_NODES])
    assert str(caught.value) == (
        f"{MAX_RUN_NODES + 1:,} nodes in one run, more than the {MAX_RUN_NODES:,} one run "
        "checks (collecting their cases takes time and memory in proportion); test a larger "
        f"cluster in parts (--cluster-node={first}, then the next {MAX_RUN_NODES:,})")


def test_this_hosts_names_slurms_first_then_its_host_name_then_that_names_first_label(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(socket, "gethostname", lambda: "gpu-7.example.org")
    assert this_host({"SLURMD_NODENAME": " gpu-007 "}) == ["gpu-007", "gpu-7.example.org",
                                                           "gpu-7"]
    assert this_host({"SLURMD_NODENAME": "  "}) == ["gpu-7.example.org", "gpu-7"]
    monkeypatch.setattr(socket, "gethostname", lambda: "gpu-7")
    assert this_host({"SLURMD_NODENAME": "gpu-7"}) == ["gpu-7"]  # each name once


def test_a_narrowed_spec_without_an_interconnect_keeps_the_rest_as_it_was() -> None:
    whole = parse_spec("cluster: {name: c, nodes: 'n[1-3]'}\nhost: {cpu_cores: 1}\n"
                       "storage:\n  - {path: /d, write: 1 GB/s}\n", "t.yaml")
    spec = narrow(whole, ["n1", "n3"])
    assert spec.cluster.nodes == ("n1", "n3")
    assert spec.cluster.chosen_from == ("n1", "n2", "n3") and not spec.cluster.here
    assert spec.whole is whole and spec.interconnect is None
    assert spec.storage == whole.storage and spec.host == whole.host
    assert narrow(whole, ["n1"], here=True).cluster.launcher == "local"  # local already

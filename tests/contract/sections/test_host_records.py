"""contract/sections/host_records.py: what host.golden compares each node with, as its
requirement names it."""

from __future__ import annotations

from pytest_cluster.contract.sections.host_records import Golden


def test_the_golden_says_what_it_is() -> None:
    assert Golden().said == "the nodes' majority"
    assert Golden(node="gpu-001").said == "golden node gpu-001"
    assert Golden(file="golden.yaml").said == "golden file golden.yaml"

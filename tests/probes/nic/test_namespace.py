"""probes/nic/namespace.py: whether the /sys read is this process's network namespace's."""

from __future__ import annotations

import socket

import pytest

from pytest_cluster.probes import nic
from pytest_cluster.probes.nic import namespace, sysfs


def test_a_sysfs_of_another_namespace_is_said_naming_both_sides() -> None:
    assert nic.namespace_mismatch(["lo", "eth0"], ["eth0", "lo"]) == ""
    assert nic.namespace_mismatch(["eth0", "lo", "docker0"], ["lo", "rail1"]) == (
        "/sys/class/net belongs to another network namespace: it shows docker0, eth0, lo; "
        "this process's namespace has lo, rail1 (socket.if_nameindex()); no port read "
        "(nsenter --net or unshare keep the /sys of the namespace they left: ip netns exec "
        "remounts it)")
    many = [f"veth{i}" for i in range(nic.MAX_NAMED + 3)]
    assert nic.listed(set(many)) == ", ".join(sorted(many)[:nic.MAX_NAMED]) + " and 3 more"
    assert nic.listed(set()) == "none"


def test_this_processs_interfaces_are_the_kernels_names(monkeypatch: pytest.MonkeyPatch) -> None:
    assert "lo" in namespace.own_interfaces()
    many = [(index, f"veth{index}") for index in range(sysfs.MAX_ENTRIES + 5)]
    monkeypatch.setattr(socket, "if_nameindex", lambda: many)
    assert namespace.own_interfaces() == [name for _, name in many[:sysfs.MAX_ENTRIES]]

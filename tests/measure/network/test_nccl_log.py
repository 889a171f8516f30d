"""NCCL's INFO lines, as its versions print them (quoted in NCCL's issues: #707 for 2.7-era
GDRDMA channels, nv_peer_memory#56 for 2.4's device lines, #1814 for a net plugin's
channels, a 2.2x run without GPUDirect, and a 2024 one with relaxed ordering and PXN),
parsed into what a run used."""

from __future__ import annotations

from pathlib import Path

from pytest_cluster.measure.network.nccl_log import MAX_LINE, inter_node, parse
from pytest_cluster.probes.jobs.collective import nccl_lines

IB_GDR = """\
node1:120890:121560 [0] NCCL INFO NET/Socket : Using [0]ib0:192.168.11.1<0>
node1:120890:121560 [0] NCCL INFO NET/Plugin : No plugin found (libnccl-net.so).
n1:12:13 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB ib0:192.168.11.1<0>
node1:120890:121560 [0] NCCL INFO Using network IB
node1:120890:121560 [0] NCCL INFO Channel 01 : 2[c7000] -> 0[87000] [receive] via NET/IB/5/GDRDMA
node1:120890:121560 [0] NCCL INFO Channel 01 : 0[87000] -> 2[c7000] [send] via NET/IB/5/GDRDMA
node1:120890:121560 [0] NCCL INFO Channel 02 : 3[ca000] -> 0[87000] [receive] via NET/IB/4/GDRDMA
node1:120890:121560 [0] NCCL INFO Channel 02 : 0[87000] -> 1[8d000] [send] via P2P/IPC
node1:120890:121560 [0] NCCL INFO some other line, ignored
"""

IB_NO_GDR = """\
:22901:22901 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/4
:22901:22901 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[0] [send] via NET/IB/5
:22901:22901 [0] NCCL INFO Channel 02/0 : 0[0] -> 1[0] [send] via NET/IB/4
:22901:22916 [0] NCCL INFO NCCL_IB_GID_INDEX set by environment to 3.
:22901:22901 [0] NCCL INFO Connected all rings, use ring PXN 0 GDR 0
"""

SOCKET = """\
gpu01:351578:352168 [0] NCCL INFO NET/IB : No device found.
gpu01:351578:352168 [0] NCCL INFO NET/Socket : Using [0]eth0:10.1.0.5<0> [1]eth1:10.2.0.5<0>
gpu01:351578:352168 [0] NCCL INFO Using network Socket
gpu01:351578:352168 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/Socket/0
gpu01:351578:352168 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[0] [send] via NET/Socket/1
gpu01:351578:352168 [0] NCCL INFO Connected all rings, use ring PXN 0 GDR 0
"""

PLUGIN = """\
hostname-test:986:1254 [6] NCCL INFO Using network IBext_v8
hostname-test:986:1254 [6] NCCL INFO Channel 00/0 : 6[6] -> 38[6] [receive] via NET/IBext_v8/1
host:986:1254 [6] NCCL INFO Channel 02/0 : 6[6] -> 38[6] [receive] via NET/IBext_v8/1/GDRDMA
"""

INTRA = """\
dgx:1:1 [0] NCCL INFO NVLS multicast support is available on dev 0
dgx:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read
dgx:1:1 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[1] via P2P/CUMEM/read
dgx:1:1 [0] NCCL INFO Channel 02/0 : 0[0] -> 1[1] via SHM/direct/direct
"""


def test_ib_with_gpudirect_rdma() -> None:
    found = parse(IB_GDR)
    assert (found.network, found.devices, found.oob) == (
        "IB", ["mlx5_0:1/IB", "mlx5_1:1/IB"], "ib0:192.168.11.1<0>")
    assert found.channels == {"NET/IB/GDRDMA": 3, "P2P": 1}
    assert (found.gdr, found.net_devices, found.nvls) == (True, [4, 5], None)
    assert found.plugin == "No plugin found (libnccl-net.so)."
    assert inter_node(found) == "ib"


def test_ib_without_gpudirect_rdma() -> None:
    found = parse(IB_NO_GDR)
    assert found.network is None and found.devices == []  # not said: not guessed
    assert found.channels == {"NET/IB": 3}
    assert (found.gdr, found.net_devices) == (False, [4, 5])
    assert inter_node(found) == "ib"


def test_a_fallback_to_sockets() -> None:
    found = parse(SOCKET)
    assert (found.network, found.devices) == ("Socket", ["eth0:10.1.0.5<0>",
                                                         "eth1:10.2.0.5<0>"])
    assert found.channels == {"NET/Socket": 2} and found.gdr is False
    assert inter_node(found) == "socket"


def test_a_net_plugin_is_its_network() -> None:
    found = parse(PLUGIN)
    assert found.network == "IBext_v8" and inter_node(found) == "ib"
    assert found.channels == {"NET/IBext_v8": 1, "NET/IBext_v8/GDRDMA": 1}
    assert found.gdr is False  # not every network channel: GDR is not what it used


def test_inside_a_node() -> None:
    found = parse(INTRA)
    assert found.channels == {"P2P": 2, "SHM": 1} and found.nvls is True
    assert (found.gdr, inter_node(found)) == (None, None)


def test_a_job_is_summarised_with_the_ranks_of_each_answer() -> None:
    from pytest_cluster.measure.network.nccl_log import describe, rank_ranges, summary

    assert rank_ranges([9, 0, 1, 2, 3, 5]) == "0-3,5,9"
    ranks = [{"rank": r, "nccl_log": IB_GDR.splitlines()} for r in range(4)]
    ranks += [{"rank": 4, "nccl_log": SOCKET.splitlines()}, {"rank": 5, "sizes": []}]
    found = summary(ranks)
    assert found["inter_node"] == {"ib": "0-3", "socket": "4"}
    assert found["gdr"] == {"false": "4", "true": "0-3"}
    assert found["not_said"] == "5"
    assert found["channels"] == {"NET/IB/GDRDMA": 12, "NET/Socket": 2, "P2P": 4}
    assert describe(found) == ("inter_node ib (ranks 0-3), socket (ranks 4); gdr false "
                               "(ranks 4), true (ranks 0-3); nvls none (ranks 0-4); not "
                               "said by ranks 5")
    gloo = summary([{"rank": 0, "gloo": {"interface": "eth1", "address": "10.0.0.1"}},
                    {"rank": 1, "gloo": {"interface": "eth1", "address": "10.0.0.2"}}])
    assert describe(gloo, between_nodes=False) == (
        "gloo eth1 10.0.0.1 (ranks 0), eth1 10.0.0.2 (ranks 1)")


def test_ranks_that_answer_oddly_say_nothing_of_a_rank() -> None:
    from pytest_cluster.measure.network.nccl_log import summary

    found = summary([{"rank": "0", "nccl_log": ["x"]}, {"rank": True}, {"sizes": []},
                     {"rank": 3, "nccl_log": [None, 5] * 10_000}])
    assert found["inter_node"] == {"None": "3"}  # its lines say nothing: not guessed


# NCCL of 2024 on (a 4-NIC node, quoted in a published log): the NICs use relaxed ordering,
# `[RO]; OOB` after them; PXN channels say the NIC and, in brackets, the rank whose proxy
# sends (`NET/IB/0(8)/GDRDMA`: NIC 0 through rank 8).
RELAXED_PXN = """\
lrdn2296:4063850:4063871 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB \
[2]mlx5_2:1/IB [3]mlx5_3:1/IB [RO]; OOB ib0:10.128.42.1<0>
lrdn2296:4063850:4063871 [0] NCCL INFO Using network IB
aihub0008:181412:181412 [1] NCCL INFO Channel 00/0 : 9[1] -> 0[0] [send] via NET/IB/0(8)/GDRDMA
aihub0008:181411:181411 [0] NCCL INFO Channel 00/0 : 1[1] -> 8[0] [receive] via NET/IB/2/GDRDMA
aihub0008:181412:181412 [1] NCCL INFO Channel 01/0 : 9[1] -> 0[0] [send] via NET/IB/3(8)/GDRDMA
"""


def test_relaxed_ordering_keeps_the_oob_interface_and_pxn_its_nic() -> None:
    found = parse(RELAXED_PXN)
    assert (found.network, found.oob) == ("IB", "ib0:10.128.42.1<0>")
    assert found.devices == ["mlx5_0:1/IB", "mlx5_1:1/IB", "mlx5_2:1/IB", "mlx5_3:1/IB"]
    assert found.channels == {"NET/IB/GDRDMA": 3}
    assert (found.gdr, found.net_devices) == (True, [0, 2, 3])


def test_the_probe_keeps_what_the_reader_reads(tmp_path: Path) -> None:
    """`kept` (the probe's filter) lets through every line `parse` reads, and not the
    ring's order or a channel line without its transport."""
    log = tmp_path / "nccl.log"
    log.write_text(RELAXED_PXN + INTRA + "h:1:1 [0] NCCL INFO Channel 00/32 :    0   1   2\n"
                   "h:1:1 [0] NCCL INFO Channel 00 :  via NET/IB/1\n"
                   "h:1:1 [0] NCCL INFO Channel 00 : via NET/IB/1\n")
    lines = nccl_lines(str(log))
    assert lines is not None and len(lines) == len(RELAXED_PXN.splitlines()) + 4 + 1
    assert lines[-1] == "h:1:1 [0] NCCL INFO Channel 00 :  via NET/IB/1"
    assert parse("\n".join(lines)).net_devices == [0, 1, 2, 3]


def test_odd_nic_numbers_and_long_lines_say_nothing_and_raise_nothing() -> None:
    odd = ("h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/\u00b2/GDRDMA\n"
           "h:1:1 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[0] [send] via NET/IB/"
           + "9" * 500 + "/GDRDMA\n")
    found = parse(odd)
    assert found.channels == {"NET/IB/GDRDMA": 2} and found.net_devices == []
    # a line is read in its first MAX_LINE characters: what a node adds beyond is not read
    long = "h:1:1 [0] NCCL INFO Using network " + "x" * MAX_LINE + "\n"
    assert parse(long).network == "x" * (MAX_LINE - len("h:1:1 [0] NCCL INFO Using network "))

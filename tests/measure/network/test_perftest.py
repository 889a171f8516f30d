"""measure/network/perftest.py: ib_write_bw's command line and its output read into a rate, on
the exact text perftest prints."""

from __future__ import annotations

import math

import pytest

from pytest_cluster.measure.network import perftest


def test_perftest_output_reads_as_its_versions_print_it() -> None:
    # linux-rdma/perftest#273 (2024), --report_gbits: peak 0.00 (not measured with -D)
    text = (" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   "
            "MsgRate[Mpps]\n 8          224958464        0.00               0.48   \t\t   "
            "7.498617\n---------------------------------------------------------------------"
            "------------------\n")
    found = perftest.parse(text)
    assert (found.bytes, found.iterations, found.peak) == (8, 224958464, 0.0)
    assert found.average == 0.48 * 125_000_000
    mib = text.replace("Gb/sec", "MiB/sec")  # newer versions without --report_gbits
    assert perftest.parse(mib).average == 0.48 * 2**20
    qos = (" #bytes    #sl      #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   "
           "MsgRate[Mpps]\n 65536      3        5000             96.40              96.38"
           "              0.183838\n")
    assert perftest.parse(qos).average == 96.38 * 125_000_000
    for bad, why in (("Couldn't connect to n1:29501", "no perftest bandwidth table"),
                     (text.split("\n", maxsplit=1)[0],
                      "perftest printed its header but no result line"),
                     (text.replace("Gb/sec", "furlongs"),
                      "perftest reported its bandwidth in 'furlongs'")):
        with pytest.raises(ValueError, match=why):
            perftest.parse(bad)
    with pytest.raises(ValueError, match="not an HCA port: 'mlx5_0; reboot'"):
        perftest.command("ib_write_bw", "mlx5_0; reboot", 1)
    rate, why = perftest.group_rate([{"rank": 1, "tool": "ib_write_bw", "exit_code": 1,
                                      "stderr_tail": "Couldn't connect to n1:29501\n"}])
    assert math.isnan(rate)
    assert why == "rank 1: ib_write_bw exited with 1: Couldn't connect to n1:29501"


def test_the_command_line_is_exact_and_refuses_what_it_will_not_run() -> None:
    assert perftest.command("ib_write_bw", "mlx5_2", 1, cuda=2) == [
        "ib_write_bw", "-d", "mlx5_2", "-i", "1", "-s", "1048576", "-D", "5",
        "--report_gbits", "-F", "--use_cuda=2"]
    assert perftest.command("ib_write_bw", "mlx5_0", 2, size=4096, seconds=0.5) == [
        "ib_write_bw", "-d", "mlx5_0", "-i", "2", "-s", "4096", "-D", "0.5",
        "--report_gbits", "-F"]
    with pytest.raises(ValueError, match="not a perftest tool this runs: 'ib_read_bw'"):
        perftest.command("ib_read_bw", "mlx5_0", 1)
    with pytest.raises(ValueError, match="not an HCA port: 'mlx5_0' port 0"):
        perftest.command("ib_write_bw", "mlx5_0", 0)


TABLE = (" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n"
         " 1048576    5000             0.00               {rate}   \t\t   0.011\n")


def test_a_groups_rate_is_its_slowest_clients_and_a_client_that_did_not_read_says_why() -> None:
    def client(rank: int, rate: str) -> dict[str, object]:
        return {"rank": rank, "tool": "ib_write_bw", "exit_code": 0,
                "stdout": TABLE.format(rate=rate)}

    assert perftest.group_rate([client(1, "96.50"), client(2, "48.25")]) == (
        48.25 * 125_000_000, "")
    # the last result line under the header is the one read
    twice = client(1, "10.00")
    twice["stdout"] = str(twice["stdout"]) + TABLE.format(rate="90.00").split("\n")[1]
    assert perftest.parse(str(twice["stdout"])).average == 90.0 * 125_000_000
    rate, why = perftest.group_rate([client(1, "96.50"), {**client(2, ""), "stdout": "hi"}])
    assert math.isnan(rate) and why == (
        "rank 2: no perftest bandwidth table (no '#bytes ... BW average[...]' line)")
    rate, why = perftest.group_rate([])
    assert math.isnan(rate) and why == "no client measured"

"""contract/sections/busbw.py: nccl-tests' formulas, the theoretical busbw the spec's links allow,
the
busbw clause as a rate, and per-rank times aggregated into one point per payload."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_cluster.contract.sections.busbw import (
    CollectiveRun,
    SizePoint,
    aggregate,
    bus_factor,
    required_busbw,
    slowest_rank,
    theoretical,
)
from tests.contract.sections.test_interconnect import H100, ic


def test_bus_factors_are_nccl_tests() -> None:
    assert bus_factor("all_reduce", 8) == 2 * 7 / 8
    assert bus_factor("all_gather", 8) == bus_factor("reduce_scatter", 8) == 7 / 8
    assert bus_factor("alltoall", 16) == 15 / 16
    assert bus_factor("all_reduce", 1) == 0.0


def test_theoretical_busbw_says_how_it_was_derived() -> None:
    spec = ic()
    one = theoretical(spec, 1)
    assert one is not None
    assert (one.bytes_per_s, one.derivation) == (
        450e9, "nvlink 450 GB/s per GPU per direction = 450 GB/s")
    many = theoretical(spec, 4)
    assert many is not None
    assert (many.bytes_per_s, many.derivation) == (
        400e9, "infiniband 8 NIC(s) x 400 Gb/s per node = 400 GB/s (a ring crosses each "
               "node's NICs once)")
    clause, _ = required_busbw(spec, 4, "inter_node")
    assert clause.requirement.text == ">= 80% of 400 GB/s = 320 GB/s"
    assert clause.requirement.check(300e9, "4 nodes busbw").message == (
        "4 nodes busbw: measured 300 GB/s < required 320 GB/s (93.75% of required)")
    absolute = ic(H100.replace('">= 80%"', '">= 360 GB/s"'))
    assert clause.key == "interconnect.busbw[inter_node]"
    assert required_busbw(absolute, 1, "intra_node")[0].requirement.text == ">= 360 GB/s"


def rank(index: int, times: list[float], iterations: list[list[float]]) -> dict[str, Any]:
    return {"rank": index, "sizes": [{"bytes": 2**20 * (i + 1), "time_s": t,
                                      "iteration_s": it, "wrong": 0}
                                     for i, (t, it) in enumerate(zip(times, iterations,
                                                                     strict=True))]}


def test_per_rank_times_become_nccl_tests_numbers() -> None:
    ranks = [rank(0, [0.001, 0.002], [[0.001, 0.001], [0.002, 0.002]]),
             rank(1, [0.003, 0.002], [[0.002, 0.004], [0.002, 0.002]])]
    first, second = aggregate("all_reduce", ranks)
    assert first.time_s == 0.002  # mean over ranks (nccl-tests -a 1)
    assert first.algbw == 2**20 / 0.002
    assert first.busbw == first.algbw * 1.0  # 2(n-1)/n with n = 2
    # per iteration the slowest rank's time: 0.002 then 0.004
    assert first.busbw_iterations == (2**20 / 0.002, 2**20 / 0.004)
    assert first.slowest_rank == 1
    assert first.spread == (2**20 / 0.004, (2**20 / 0.004 + 2**20 / 0.002) / 2,
                            2**20 / 0.002)
    assert second.bytes == 2**21
    assert second.slowest_rank is None  # both took 0.002 s: no rank to name
    run = CollectiveRun("all_reduce", "gloo", ("a", "b"), 1, (first, second))
    again = CollectiveRun.from_json(json.loads(json.dumps(run.to_json())))
    assert again == run
    assert run.at(2**21) == second
    assert run.at(3 * 2**20) is None


#: nccl-tests' doc/PERFORMANCE.md, busbw = algbw x factor: all_reduce 2(n-1)/n,
#: reduce_scatter and all_gather (n-1)/n, alltoall (n-1)/n.
PUBLISHED = {"all_reduce": lambda n: 2 * (n - 1) / n, "all_gather": lambda n: (n - 1) / n,
             "reduce_scatter": lambda n: (n - 1) / n, "alltoall": lambda n: (n - 1) / n}


@pytest.mark.parametrize("collective", sorted(PUBLISHED))
@pytest.mark.parametrize("ranks", [2, 3, 8, 16, 1024])
def test_each_collectives_factor_is_the_published_one(collective: str, ranks: int) -> None:
    assert bus_factor(collective, ranks) == pytest.approx(PUBLISHED[collective](ranks))


def test_a_collective_nccl_tests_has_no_formula_for_here_is_refused() -> None:
    with pytest.raises(ValueError, match=r"^unknown collective 'broadcast'$"):
        bus_factor("broadcast", 8)


def test_no_link_given_no_theory_and_a_slower_nvlink_caps_the_network() -> None:
    bare = ic(H100.replace("  intra_node: {kind: nvlink, rate: 450 GB/s}\n", "")
              .replace("  inter_node: {kind: infiniband, nics_per_node: 8, "
                       "rate_per_nic: 400 Gb/s}\n", "").replace('">= 80%"', '">= 1 GB/s"'))
    assert theoretical(bare, 1) is None and theoretical(bare, 4) is None
    clause, theory = required_busbw(bare, 4, "inter_node")  # a rate stays a rate
    assert theory is None and clause.requirement.text == ">= 1 GB/s"
    slow = ic(H100.replace("rate: 450 GB/s", "rate: 100 GB/s"))
    capped = theoretical(slow, 4)
    assert capped is not None and capped.bytes_per_s == 100e9
    assert capped.derivation.endswith("; capped by nvlink 100 GB/s")


def test_the_slowest_rank_is_named_only_where_one_took_longer() -> None:
    ranks = [{"rank": 4}, {"rank": 7}, {"rank": 9}]
    assert slowest_rank(ranks, [{"time_s": 1.0}, {"time_s": 3.0}, {"time_s": 2.0}]) == 7
    assert slowest_rank(ranks, [{"time_s": 2.0}] * 3) is None
    assert slowest_rank([], []) is None


def test_a_run_is_ok_only_with_points_and_no_error() -> None:
    point = SizePoint(2**20, 0.001, 1e9, 1e9, (), 0, None)
    assert point.spread == (1e9, 1e9, 1e9)  # no iterations: the point's own busbw
    assert CollectiveRun("all_reduce", "gloo", ("a",), 2, (point,)).ok
    assert not CollectiveRun("all_reduce", "gloo", ("a",), 2).ok
    assert not CollectiveRun("all_reduce", "gloo", ("a",), 2, (point,), error="boom").ok


def test_a_payload_is_found_within_its_rounding_only() -> None:
    """Buffers round to whole elements: a point within 64 bytes (or 0.1%) is the payload's."""
    point = SizePoint(2**30 - 1000, 0.1, 1e9, 1e9, (), 0, None)
    run = CollectiveRun("all_reduce", "gloo", ("a", "b"), 1, (point,))
    assert run.at(2**30) == point  # 1000 bytes off a GiB: under 0.1%
    assert run.at(2**29) is None
    small = CollectiveRun("all_reduce", "gloo", ("a",), 2, (SizePoint(1000, 0.1, 1, 1, (), 0,
                                                                     None),))
    assert small.at(1064) is not None and small.at(1065) is None
    assert CollectiveRun("all_reduce", "gloo", ("a",), 2).at(2**20) is None


def test_a_failed_runs_record_survives_json() -> None:
    run = CollectiveRun("alltoall", "nccl", ("a", "b"), 8, error="x", error_kind="not_all_nodes",
                        crashed=True, simulated=True, details={"nccl": "2.21"})
    assert CollectiveRun.from_json(json.loads(json.dumps(run.to_json()))) == run


def test_a_zero_time_gives_no_bandwidth_instead_of_dividing_by_it() -> None:
    ranks: list[dict[str, Any]] = [
        {"rank": r, "sizes": [{"bytes": 8, "time_s": 0.0, "iteration_s": [0.0], "wrong": 1}]}
        for r in (0, 1)]
    (point,) = aggregate("all_gather", ranks)
    assert (point.algbw, point.busbw, point.busbw_iterations, point.wrong) == (0.0, 0.0, (), 2)

"""Counters that must not grow (issue 15, item 3): one GPU probe against a later one,
matched by UUID; here on the real GPU probe answered by the simulated NVML."""

from __future__ import annotations

from typing import Any

from pytest_cluster.contract.model import ClusterSpec
from pytest_cluster.contract.sections.sim_records import SimFault, SimSpec
from pytest_cluster.launchers.sim import SimLauncher
from pytest_cluster.probes import ProbeCall
from pytest_cluster.soak.counters import counts, growth


def probe(*faults: SimFault) -> dict[str, Any]:
    cluster = ClusterSpec("c", ("n1",), "sim", "python3", 60, 4)
    launcher = SimLauncher(cluster, SimSpec("H100-SXM-80GB", 8, faults=faults))
    result = launcher.run(ProbeCall("gpu", ("--xid-window", "0")), ["n1"], 60)["n1"]
    payload: dict[str, Any] = result.payload()
    return payload


def test_a_healthy_node_grows_nothing_and_ecc_errors_that_appear_are_named() -> None:
    first = probe()
    assert growth(first, probe()) == {}
    later = probe(SimFault("n1", 2, 1, ecc_uncorrected=3))
    found = growth(first, later)
    [(where, changes)] = found.items()
    assert where.startswith("gpu2 GPU-")
    # the aggregate and the volatile count are the same errors: named once
    assert changes == ["ECC uncorrected 0 -> 3 (+3; volatile 0 -> 3)"]
    assert counts(first["gpus"][0])["NVLink replay errors"] == 0


def test_a_swapped_gpu_is_not_compared_with_its_predecessor() -> None:
    first = probe(SimFault("n1", 5, 1, ecc_uncorrected=9))
    later = probe(SimFault("n1", 5, 1, replaced=True))
    found = growth(first, later)
    assert list(found.values()) == [["gone: NVML no longer lists it"]]
    assert next(iter(found)).startswith("gpu5 ")


def test_xids_in_the_later_probe_and_unreadable_counters() -> None:
    entry = {"index": 0, "uuid": "GPU-a", "ecc": {"aggregate": {"corrected": 1,
                                                               "uncorrected": {"error": "x"}}},
             "pcie": {"replays": 4}}
    later = {"index": 0, "uuid": "GPU-a", "ecc": {"aggregate": {"corrected": 1,
                                                               "uncorrected": 2}},
             "pcie": {"replays": 7}}
    assert counts(entry) == {"ECC corrected": 1, "PCIe replays": 4}
    assert growth({"gpus": [entry]}, {"gpus": [later], "xid": {"events": [
        {"gpu": 0, "xid": 79}, {"gpu": 1, "xid": 48}]}}) == {
        "gpu0 GPU-a": ["PCIe replays 4 -> 7 (+3)", "XID 79 during the probe"]}


def test_a_volatile_count_that_grew_alone_is_named_alone() -> None:
    before = {"index": 0, "uuid": "GPU-a", "ecc": {"aggregate": {"uncorrected": 5},
                                                   "volatile": {"uncorrected": 0}}}
    after = {"index": 0, "uuid": "GPU-a", "ecc": {"aggregate": {"uncorrected": 5},
                                                  "volatile": {"uncorrected": 2}}}
    assert growth({"gpus": [before]}, {"gpus": [after]}) == {
        "gpu0 GPU-a": ["ECC uncorrected (volatile) 0 -> 2 (+2)"]}

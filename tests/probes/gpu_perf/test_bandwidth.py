"""probes/gpu_perf/bandwidth.py: usable memory, device, host<->device and GPU<->GPU copies,
against the fake torch (no GPU here): the arithmetic from the times its events give."""

from __future__ import annotations

import statistics

from pytest_cluster.probes.gpu_perf import bandwidth
from pytest_cluster.probes.gpu_perf.options import MIB
from tests.probes.gpu_perf.fake import fake_torch, timed

TIMES_MS = [1.0, 2.0, 4.0, 8.0]


def test_usable_memory_is_what_could_be_allocated_then_freed() -> None:
    torch = fake_torch()
    free, total = torch.cuda.mem_get_info()
    found = bandwidth.usable_memory(torch)
    assert total % (2 * MIB) == 0  # so every byte of it can be allocated in 2 MiB steps
    assert (found["allocated_bytes"], found["cuda_total_bytes"],
            found["cuda_free_before_bytes"]) == (total, total, free)
    assert found["failed_allocations"] > 0  # it stopped when allocation failed
    assert torch.cuda.mem_get_info() == (free, total)  # all freed


def test_usable_memory_counts_what_another_process_holds_out() -> None:
    torch = fake_torch()
    held = torch.empty(100 * MIB, dtype=torch.uint8, device="cuda")
    found = bandwidth.usable_memory(torch)
    assert found["allocated_bytes"] == found["cuda_total_bytes"] - held.nbytes
    assert found["cuda_free_before_bytes"] == found["cuda_total_bytes"] - held.nbytes


def test_a_device_copy_counts_the_bytes_read_and_written() -> None:
    nbytes = 4 * MIB
    rate = bandwidth.copy_bandwidth(timed(TIMES_MS), nbytes, len(TIMES_MS), 0.0)
    rates = [2 * nbytes / (ms / 1e3) for ms in TIMES_MS]
    assert (rate["bytes_per_s"], rate["median_bytes_per_s"], rate["max_bytes_per_s"],
            rate["min_bytes_per_s"]) == (statistics.median(rates), statistics.median(rates),
                                         max(rates), min(rates))
    assert (rate["buffer_bytes"], rate["iterations"], rate["warmup_s"]) == (
        nbytes, len(TIMES_MS), 0.0)


def test_a_host_copy_counts_its_bytes_once_and_says_its_direction() -> None:
    nbytes = 8 * MIB
    rates = [nbytes / (ms / 1e3) for ms in TIMES_MS]
    for to_device, direction in ((True, "host to device"), (False, "device to host")):
        rate = bandwidth.host_bandwidth(timed(TIMES_MS), nbytes, len(TIMES_MS), to_device, 0.0)
        assert (rate["bytes_per_s"], rate["max_bytes_per_s"], rate["min_bytes_per_s"]) == (
            statistics.median(rates), max(rates), min(rates))
        assert rate["method"].startswith(f"{direction} copy_")


def test_every_ordered_pair_of_gpus_is_copied() -> None:
    torch = fake_torch()
    count = 3
    found = bandwidth.p2p_bandwidth(torch, count, MIB, 2)
    assert [(pair["src"], pair["dst"]) for pair in found["pairs"]] == [
        (src, dst) for src in range(count) for dst in range(count) if src != dst]
    assert all(pair["peer_access"] is True and pair["bytes_per_s"] > 0
               for pair in found["pairs"])
    assert (found["buffer_bytes"], found["iterations"]) == (MIB, 2)
    assert bandwidth.p2p_bandwidth(torch, 1, MIB, 2)["pairs"] == []

"""probes/_lib/nvml.py: what the GPU probes read of NVML alike."""

from __future__ import annotations

from pytest_cluster.probes._lib.nvml import THROTTLE_BITS, text


def test_nvml_strings_read_as_str_whichever_binding() -> None:
    assert [text(b"NVIDIA H100"), text("NVIDIA H100"), text(7)] == ["NVIDIA H100"] * 2 + ["7"]


def test_the_throttle_bits_are_distinct_single_bits() -> None:
    bits = list(THROTTLE_BITS.values())
    assert len(set(bits)) == len(bits) and all(bit & (bit - 1) == 0 for bit in bits)

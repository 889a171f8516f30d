"""The spec's clauses parsed as their declarations say."""

from __future__ import annotations

from pytest_cluster.contract.reading.clause_parsers import respelled
from pytest_cluster.units import Dim, parse_quantity


def test_a_rate_respelled_in_another_unit_keeps_the_number_written() -> None:
    bytes_meant = parse_quantity("400 GB/s", Dim.RATE)
    bits = respelled(bytes_meant, "Gb/s")
    assert bits is not None and str(bits) == "400 Gb/s"
    assert bits.value * 8 == bytes_meant.value
    assert respelled(bytes_meant, "GB") is None  # a size: not a rate

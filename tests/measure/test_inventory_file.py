"""measure/inventory_file.py: inventory.json's records, and a value read as unreadable
only where it is the map that says why."""

from __future__ import annotations

from pytest_cluster.measure.inventory_file import is_unreadable, unreadable


def test_only_the_map_unreadable_makes_is_one() -> None:
    said = unreadable("the NIC probe's answer: no list of ports")
    assert said == {"unreadable": "the NIC probe's answer: no list of ports"}
    assert is_unreadable(said)
    for value in ("unreadable", ["unreadable"], {"name": "mlx5_0"}, None, {}):
        assert not is_unreadable(value), value

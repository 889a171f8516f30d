"""contract/sections/sim_records.py: the `sim:` section as frozen records, a simulated cluster and
its
faults."""

from __future__ import annotations

import dataclasses

import pytest

from pytest_cluster.contract.sections.sim_records import SimFault, SimSpec

#: What a fault's field is when the spec does not write it: nothing wrong.
HEALTHY = (None, False, 0, 1.0)


def test_a_fault_that_names_only_its_node_changes_nothing() -> None:
    fault = SimFault("n1", None, 3)
    for field in dataclasses.fields(SimFault):
        if field.name in ("node", "gpu", "line", "from_round"):
            continue
        assert getattr(fault, field.name) in HEALTHY, field.name
    assert (fault.from_round, fault.until_round) == (1, None)  # from the first round, for good


def test_a_healthy_cluster_is_its_model_and_gpus_with_no_fault_and_no_delay() -> None:
    spec = SimSpec("H100-SXM-80GB", 8)
    assert (spec.faults, spec.latency_s, spec.storage_rate) == ((), 0.0, 0.0)
    assert spec.cpu_threads == 2 * spec.cpu_cores


def test_the_records_are_frozen_and_hashable() -> None:
    fault = SimFault("n1", 0, 3, nic_down=True, nic=1)
    assert hash(fault) == hash(SimFault("n1", 0, 3, nic_down=True, nic=1))
    assert len({fault, SimFault("n1", 0, 3)}) == 2
    with pytest.raises(dataclasses.FrozenInstanceError):
        fault.down = True  # type: ignore[misc]

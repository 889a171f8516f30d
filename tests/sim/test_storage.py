"""sim/storage.py: a node's storage faults land on that node and on no other."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from pytest_cluster.contract.sections.sim import STORAGE_ERRORS
from pytest_cluster.contract.sections.sim_records import SimFault, SimSpec
from pytest_cluster.sim import storage

if TYPE_CHECKING:
    from pytest_cluster.probes.job_node import RankEntry

NODES = ("n1", "n2", "n3")
SIM = SimSpec("H100-SXM-80GB", 8, faults=(
    SimFault("n1", None, 1, storage_factor=0.25),
    SimFault("n2", None, 2, storage_corrupt=True),
    SimFault("n3", None, 3, storage_error="ENOSPC", storage_unmounted=True),
))


def _only(found: dict[str, object], node: str, healthy: object) -> None:
    assert [name for name, value in found.items() if value != healthy] == [node]


def test_each_storage_fault_is_on_its_node_alone() -> None:
    _only({n: storage.storage_factor(SIM, n) for n in NODES}, "n1", 1.0)
    _only({n: storage.corrupt(SIM, n) for n in NODES}, "n2", False)
    _only({n: storage.storage_error(SIM, n) for n in NODES}, "n3", None)
    _only({n: storage.unmounted(SIM, n) for n in NODES}, "n3", False)


def test_a_full_export_fails_the_writes_of_its_node_naming_the_error() -> None:
    found = storage.failed(SIM, "n3", "write", "/shared/x")
    assert found is not None
    message, name = found
    assert name == "ENOSPC" and message.startswith("write on /shared/x: ")
    assert message == f"write on /shared/x: {STORAGE_ERRORS['ENOSPC']}"
    assert storage.failed(SIM, "n1", "write", "/shared/x") is None


def test_a_node_without_the_mount_does_not_see_what_another_wrote() -> None:
    assert storage.apart(SIM, "n3", "n1") and storage.apart(SIM, "n1", "n3")
    assert not storage.apart(SIM, "n1", "n2")
    assert not storage.apart(SIM, "n3", "n3")  # its own files it sees


def test_a_slow_client_writes_at_its_share_of_a_healthy_one() -> None:
    healthy = SimSpec("H100-SXM-80GB", 8)
    for phase in ("write", "read"):
        assert storage.node_rate(SIM, "n1", 1, phase) == pytest.approx(
            storage.node_rate(healthy, "n1", 1, phase) * 0.25)
        assert storage.node_rate(SIM, "n2", 1, phase) == storage.node_rate(
            healthy, "n2", 1, phase)


def _ranks_data(parts: list[list[RankEntry]]) -> dict[str, list[dict[str, object]]]:
    return {node: [dict(rank["data"] or {}) for rank in part]
            for node, part in zip(NODES, parts, strict=True)}


def test_a_checkpoint_fails_on_the_node_whose_client_fails_and_only_there() -> None:
    found = _ranks_data(storage.checkpoint_ranks(SIM, NODES, 2, ["--phase", "write"]))
    assert [node for node, ranks in found.items() if any("error" in r for r in ranks)] == ["n3"]
    assert {r["errno"] for r in found["n3"]} == {"ENOSPC"}


def test_a_node_that_reads_back_wrong_bytes_is_the_one_with_bad_blocks() -> None:
    sim = SimSpec("H100-SXM-80GB", 8, faults=SIM.faults[:2])  # every mount there
    found = _ranks_data(storage.checkpoint_ranks(sim, NODES, 2, ["--phase", "read"]))
    assert not [r for ranks in found.values() for r in ranks if "error" in r]
    bad = [node for node, ranks in found.items()
           if any(isinstance(r.get("bad_blocks"), int) and r["bad_blocks"] for r in ranks)]
    assert bad == ["n2"]

"""measure/storage/at_once.py: what the jobs every node runs at once on a shared filesystem
share: a fault every node shares, whose view of the filesystem is not the others', and
how a node's errors are read."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_cluster.launchers.jobs import JobResult
from pytest_cluster.measure.storage import at_once
from pytest_cluster.measure.storage.claims import node_ceiling
from tests.measure.test_prober import Recording


@pytest.mark.parametrize("kind", ["unreachable", "controller", "auth_refused"])
def test_a_node_not_reached_is_left_out_of_a_fault_every_node_shares(kind: str) -> None:
    """The filesystem's fault is judged over the nodes reached: one that did not answer,
    or that this machine could not launch on (a name it cannot resolve, credentials
    refused), neither makes nor unmakes it."""
    nodes = ["n1", "n2", "n3"]
    errors = [("n1", "write: rank 0: No space left on device"),
              ("n2", "write: rank 0: No space left on device"),
              ("n3", "host probe: not reached")]  # before the burst: no phase of it
    found = at_once.failed_everywhere(nodes, ("write", "read"), errors, [("n3", kind)])
    assert found == "n1: write: rank 0: No space left on device"
    assert at_once.failed_everywhere(nodes, ("write", "read"), errors[1:],
                                     [("n3", kind)]) == ""


@pytest.mark.parametrize(("errors", "expected"), [
    # a phase on the nodes the one before left: n2 failed its write, n1 and n3 their read
    ([("n2", "write: x"), ("n1", "read: y"), ("n3", "read: z")], "n1: read: y"),
    # some node read: no fault every node shares
    ([("n2", "write: x"), ("n1", "read: y")], ""),
    # every node failed its write: the first phase says it, the first node's error
    ([("n3", "write: full"), ("n1", "write: gone"), ("n2", "write: full")], "n1: write: gone"),
])
def test_a_fault_every_node_shares_is_the_first_phase_every_node_left_failed(
        errors: list[tuple[str, str]], expected: str) -> None:
    assert at_once.failed_everywhere(["n1", "n2", "n3"], ("write", "read"), errors,
                                     []) == expected


def test_no_node_reached_shares_no_fault() -> None:
    kinds = [(node, "unreachable") for node in ("n1", "n2")]
    assert at_once.failed_everywhere(["n1", "n2"], ("write",), [("n1", "write: x"),
                                                                ("n2", "write: x")],
                                     kinds) == ""


def test_what_a_nodes_errors_say_of_it_is_joined() -> None:
    found = (("n1", "write: a"), ("n2", "7"), ("n1", "read: b"))
    assert at_once.said_of(found, "n1") == "write: a; read: b"
    assert at_once.said_of(found, "n3") == ""


def test_a_part_that_did_not_run_is_named_with_its_phase() -> None:
    result = JobResult((), "n1", errors=("n1: n1: job_node probe unreachable: no route",
                                         "n2: launcher refused"))
    assert at_once.part_errors(result, "write") == [
        ("n1", "write: job_node probe unreachable: no route"), ("n2", "write: launcher refused")]


def _reads(missing_for: set[str], nodes: str = "abc") -> list[tuple[str, str, bool]]:
    """Every node reads every other's file; a file is missing where either side's
    mount is (in `missing_for`)."""
    return [(reader, writer, bool({reader, writer} & missing_for))
            for reader in nodes for writer in nodes]


def test_the_node_whose_mount_is_missing_is_the_one_not_sharing() -> None:
    assert at_once.not_shared(_reads(set())) == set()
    assert at_once.not_shared(_reads({"c"})) == {"c"}
    # every node alone (no one filesystem): nothing singles one out
    every = [(r, w, r != w) for r in "abc" for w in "abc"]
    assert at_once.not_shared(every) == set()
    # two nodes of four cut off from the rest but not from each other: neither is alone
    assert at_once.not_shared([(r, w, (r in "ab") != (w in "ab"))
                               for r in "abcd" for w in "abcd"]) == set()


@dataclass(frozen=True)
class Measured:
    nodes: tuple[str, ...]
    simulated: bool = False

    def to_json(self) -> Mapping[str, object]:
        return {"nodes": list(self.nodes)}


def test_everywhere_runs_once_over_the_nodes_that_answer(tmp_path: Path) -> None:
    """The nodes that do not answer their host probe are the run's errors, the others
    run it, no rate above the spec's ceiling; a second ask reads the same document."""
    cluster = Recording(tmp_path, silent=["sim-gpu-02"])
    (fs,) = cluster.spec.storage[:1]
    runs: list[tuple[Any, ...]] = []

    def run(launcher: Any, on: Any, nodes: list[str], gpus: int | None,
            silent: dict[str, str], ceiling: Any) -> Measured:
        runs.append((launcher, on, nodes, gpus, silent, ceiling))
        return Measured(tuple(nodes))

    found = at_once.everywhere(cluster, "burst", fs, run)
    assert found == {"nodes": [n for n in cluster.nodes if n != "sim-gpu-02"],
                     "simulated": False}
    assert cluster.spec.gpus is not None
    assert runs == [(cluster.launcher, fs, found["nodes"], cluster.spec.gpus.slots,
                     {"sim-gpu-02": cluster.host("sim-gpu-02").describe()},
                     node_ceiling(cluster.spec))]
    assert at_once.everywhere(cluster, "burst", fs, run) == found and len(runs) == 1

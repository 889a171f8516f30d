"""What every measurement shares (measure/prober.py): the Cluster is a Prober and keeps
nothing else; who answers its host probe, as the measurements that pair or sample the
nodes read it. `Recording` is the Cluster the measure/ tests run their calls through."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pytest_cluster.contract import load_spec
from pytest_cluster.launchers.result import ErrorKind, ProbeResult
from pytest_cluster.measure.cluster import Cluster
from pytest_cluster.measure.prober import Prober
from pytest_cluster.probes import ProbeCall

EXAMPLES = Path(__file__).resolve().parent.parent.parent / "examples"
#: Its nodes sim-gpu-[01-04]; gpus, storage and interconnect sections.
SPEC = EXAMPLES / "sim-h100-storage-faulty.yaml"


class Recording(Cluster):
    """A Cluster whose probe calls are recorded and answered here (the nodes in `silent`
    do not answer their host probe), never through its launcher."""

    def __init__(self, cache_dir: Path, silent: Sequence[str] = (),
                 selected_clauses: frozenset[str] | None = None) -> None:
        super().__init__(load_spec(SPEC), cache_dir, selected_clauses=selected_clauses)
        self.silent_nodes = tuple(silent)
        self.asked: list[tuple[ProbeCall, tuple[str, ...], float]] = []

    def run(self, call: ProbeCall, nodes: Sequence[str],
            at_least_s: float = 0.0) -> dict[str, ProbeResult]:
        self.asked.append((call, tuple(nodes), at_least_s))
        return {node: ProbeResult(node, call.name, None, ErrorKind.UNREACHABLE, "no route")
                if call.name == "host" and node in self.silent_nodes else
                ProbeResult(node, call.name, {"ok": True}) for node in nodes}


def test_the_cluster_keeps_only_what_every_measurement_shares(tmp_path: Path) -> None:
    """Every public name of a Cluster (its methods, its attributes) is a member of the
    Prober protocol, and every member of the protocol is the Cluster's: what a single
    measurement needs lives in its own module, a function taking a Prober."""
    prober: Prober = Cluster(load_spec(SPEC), tmp_path)  # mypy: the Cluster is a Prober
    public = {name for name in [*dir(Cluster), *vars(prober)] if not name.startswith("_")}
    members = {name for name in [*vars(Prober), *Prober.__annotations__]
               if not name.startswith("_")}
    assert public == members


def test_a_node_that_does_not_answer_is_left_out_and_named_first(tmp_path: Path) -> None:
    cluster = Recording(tmp_path, silent=["sim-gpu-03"])
    assert cluster.left_out() == {"sim-gpu-03": "host probe unreachable: no route"}
    silent = cluster.silent(cluster.nodes)
    assert silent is not None and silent.node == "sim-gpu-03"
    assert cluster.silent(cluster.nodes[:2]) is None
    # the host probe ran once, on every node, however often it was read
    assert [(call.name, nodes) for call, nodes, _ in cluster.asked] == [
        ("host", cluster.nodes)]

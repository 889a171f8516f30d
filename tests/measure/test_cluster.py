"""measure/cluster.py: the Cluster every measurement is given (a Prober): who answers
its host probe, who stopped answering, and how many jobs run at once."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

import pytest

from pytest_cluster.contract import parse_spec
from pytest_cluster.contract.model import ClusterSpec
from pytest_cluster.errors import ClusterError
from pytest_cluster.launchers.base import Launcher
from pytest_cluster.launchers.result import ErrorKind, ProbeResult
from pytest_cluster.measure.cluster import LOADING_PROBES, Cluster
from pytest_cluster.probes import ProbeCall
from tests.measure.test_prober import Recording

SPEC = ("cluster: {name: c, nodes: 'n[1-4]', launcher: local, probe_timeout: 30 s, "
        "parallel: 3}\nhost: {cpu_cores: '>= 1'}\n")


class Answering(Launcher):
    """Answers every call at once: `down` nodes unreachable, `cancelled` ones cancelled
    (the run interrupted); `refuses`: the launcher itself fails. Records what it was
    asked, with the timeout."""

    name: ClassVar[str] = "answering"

    def __init__(self, spec: ClusterSpec, down: Sequence[str] = (),
                 cancelled: Sequence[str] = (), refuses: bool = False) -> None:
        super().__init__(spec)
        self.down, self.cancelled, self.refuses = set(down), set(cancelled), refuses
        self.asked: list[tuple[str, tuple[str, ...], float]] = []

    def run(self, call: ProbeCall, nodes: Sequence[str],
            timeout_s: float) -> dict[str, ProbeResult]:
        self.asked.append((call.name, tuple(nodes), timeout_s))
        if self.refuses:
            raise ClusterError("sbatch: command not found")
        return {node: ProbeResult(node, call.name, None, ErrorKind.UNREACHABLE, "no route")
                if node in self.down else
                ProbeResult(node, call.name, None, ErrorKind.CANCELLED, "interrupted")
                if node in self.cancelled else ProbeResult(node, call.name, {"ok": True})
                for node in nodes}


def cluster_with(tmp_path: Path, down: Sequence[str] = (), cancelled: Sequence[str] = (),
                 refuses: bool = False) -> tuple[Cluster, Answering]:
    spec = parse_spec(SPEC, "t.yaml")
    launcher = Answering(spec.cluster, down, cancelled, refuses)
    return Cluster(spec, tmp_path, launcher=launcher), launcher


def test_a_node_that_does_not_answer_is_left_out_and_named_first(tmp_path: Path) -> None:
    cluster = Recording(tmp_path, silent=["sim-gpu-03"])
    assert cluster.left_out() == {"sim-gpu-03": "host probe unreachable: no route"}
    silent = cluster.silent(cluster.nodes)
    assert silent is not None and silent.node == "sim-gpu-03"
    assert cluster.silent(cluster.nodes[:2]) is None
    # the host probe ran once, on every node, however often it was read
    assert [(call.name, nodes) for call, nodes, _ in cluster.asked] == [
        ("host", cluster.nodes)]


def test_a_node_that_stopped_answering_is_read_again_not_from_the_cache(
        tmp_path: Path) -> None:
    """The host probe is read afresh on the nodes asked about; a node the run interrupted
    (cancelled), or one not asked about, is not named."""
    cluster, launcher = cluster_with(tmp_path, down=["n2", "n4"], cancelled=["n3"])
    assert cluster.stopped_answering(["n1", "n2", "n3"]) == {
        "n2": "host probe unreachable: no route"}
    assert cluster.stopped_answering(["n1"]) == {}
    assert launcher.asked == [("host", ("n1", "n2", "n3"), 30.0), ("host", ("n1",), 30.0)]


def test_a_launcher_that_fails_tells_nothing_of_who_stopped_answering(tmp_path: Path) -> None:
    cluster, launcher = cluster_with(tmp_path, down=["n2"], refuses=True)
    assert cluster.stopped_answering(["n1", "n2"]) == {}
    assert launcher.asked == [("host", ("n1", "n2"), 30.0)]


@pytest.mark.parametrize("name", [*LOADING_PROBES, "host"])
def test_a_call_runs_within_the_probe_timeout_or_longer_where_it_asks(
        tmp_path: Path, name: str) -> None:
    cluster, launcher = cluster_with(tmp_path)
    assert cluster.run(ProbeCall(name), ["n1"])["n1"].ok
    assert cluster.run(ProbeCall(name), ["n2"], at_least_s=90.0)["n2"].ok
    assert cluster.run(ProbeCall(name), ["n3"], at_least_s=5.0)["n3"].ok
    assert launcher.asked == [(name, ("n1",), 30.0), (name, ("n2",), 90.0),
                              (name, ("n3",), 30.0)]


def test_a_probe_runs_once_on_every_node_however_often_it_is_read(tmp_path: Path) -> None:
    cluster, launcher = cluster_with(tmp_path, down=["n3"])
    assert [cluster.probe(ProbeCall("gpu"), node).ok for node in cluster.nodes] == [
        node != "n3" for node in cluster.nodes]
    assert set(cluster.probe_all(ProbeCall("gpu"))) == set(cluster.nodes)
    assert launcher.asked == [("gpu", cluster.nodes, 30.0)]


def test_jobs_run_at_once_up_to_parallel_and_one_at_a_time_on_one_host(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cluster, _ = cluster_with(tmp_path)
    parallel = cluster.spec.cluster.parallel
    assert [cluster.jobs_at_once(jobs) for jobs in (0, 1, parallel, parallel + 5)] == [
        1, 1, parallel, parallel]
    monkeypatch.setattr(Answering, "one_host", True)
    assert cluster.jobs_at_once(parallel + 5) == 1

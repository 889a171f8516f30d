"""The interconnect's benchmark jobs (measure/network/collectives.py): a job over a node that did
not answer its host probe is not started; it fails at once, naming the node."""

from __future__ import annotations

from pathlib import Path

from pytest_cluster.measure.network import collectives
from tests.measure.test_prober import Recording


def test_a_job_with_a_node_that_does_not_answer_fails_at_once_naming_it(
        tmp_path: Path) -> None:
    cluster = Recording(tmp_path, silent=["sim-gpu-02"])
    run = collectives.collective(cluster, "all_reduce", cluster.nodes[:2], [2**20])
    assert not run.ok and run.error_kind == collectives.NOT_ALL_NODES
    assert run.error == "sim-gpu-02: host probe unreachable: no route"
    loop = collectives.stress(cluster)
    assert loop.error_kind == collectives.NOT_ALL_NODES and loop.error == run.error
    # only the host probe ran: no job was started
    assert {call.name for call, _, _ in cluster.asked} == {"host"}


def test_each_document_is_named_by_the_section_and_the_job(tmp_path: Path) -> None:
    cluster = Recording(tmp_path)
    assert collectives.key(cluster, "stress") == collectives.key(cluster, "stress")
    assert collectives.key(cluster, "inter", 2, "all_reduce") != collectives.key(
        cluster, "inter", 4, "all_reduce")
    assert collectives.key(cluster, "stress").startswith("interconnect-")

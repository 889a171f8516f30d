"""sim/answers.py: the sim's tables of probe answers and rank programs, looked up by name
(a probe) or by the program's source (a job)."""

from __future__ import annotations

from typing import cast

from pytest_cluster.contract.sections.sim_records import SimFault, SimSpec
from pytest_cluster.probes.jobs import JOB_PROGRAMS, job_source
from pytest_cluster.sim.answers import JOBS, PROBES, job_named
from pytest_cluster.sim.cluster import host_payload

SIM = SimSpec("H100-SXM-80GB", 8, faults=(SimFault("n2", None, 1, gpus=6),))


def test_each_rank_program_the_sim_plays_is_known_by_its_source() -> None:
    played = [name for name in JOB_PROGRAMS if name in JOBS]
    assert played and sorted(played) == sorted(JOBS)
    assert {name: job_named(job_source(name)) for name in played} == {n: n for n in played}
    assert job_named("print('not ours')\n") is None


def test_a_probe_is_answered_by_its_name_for_the_node_asked() -> None:
    assert PROBES["host"](SIM, None, "n1", ()) == host_payload(SIM, "n1")
    answers = {node: PROBES["gpu_perf"](SIM, None, node, ("--dtypes", "bf16"))
               for node in ("n1", "n2", "n3")}
    counts = {node: len(cast("list[object]", answer["gpus"])) for node, answer in answers.items()}
    assert counts == {"n1": 8, "n2": 6, "n3": 8}  # the node with the fault, and only it

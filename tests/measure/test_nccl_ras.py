"""What a hung job's message says of NCCL's RAS and whom it blames (measure/nccl_ras.py),
and the hang path end to end: a rank past its bound asks a fake RAS service that speaks
NCCL's protocol (tests/fake_ras.py, reached through NCCL_RAS_ADDR), prints its hang line,
and the collective run's and the training run's error names the dead rank's node."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest

from pytest_cluster.launchers.jobs import JobResult, RankResult
from pytest_cluster.measure import nccl_ras
from pytest_cluster.measure.network.benchmark import failed_run, hang_failure
from pytest_cluster.measure.training import TrainingRun, summarise
from pytest_cluster.probes.jobs.collective import HANG_EXIT, Watchdog
from pytest_cluster.probes.jobs.train import Monitor
from pytest_cluster.sim.nccl_ras import hang_report, status_json
from tests.fake_ras import FakeRas

NODES = ("gpu-001", "gpu-002", "gpu-003", "gpu-004")
PER_NODE = 8


def hung(rank: int, report: Mapping[str, Any]) -> RankResult:
    node = NODES[rank // PER_NODE]
    return RankResult(node, rank, rank % PER_NODE, HANG_EXIT, {
        "rank": rank, "hang": {"phase": "all_gather of 1048576 bytes", "waited_s": 570.5,
                               "bound_s": 570.0}, "ras": report})


def job(report: Mapping[str, Any], dead: set[int]) -> JobResult:
    ranks = [RankResult(NODES[r // PER_NODE], r, r % PER_NODE, "killed", None)
             if r in dead else hung(r, report) for r in range(len(NODES) * PER_NODE)]
    return JobResult(tuple(ranks), "gpu-001")


def test_a_dead_rank_names_its_node_and_blames_it() -> None:
    report = hang_report("nccl", NODES, PER_NODE, {17}, "all_gather")
    found = nccl_ras.finding(job(dict(report), {17}).ranks, NODES, PER_NODE)
    assert found is not None
    assert found.text == ("NCCL RAS: rank 17 (gpu-003, GPU 1) DEAD (asked on gpu-001 by "
                          "rank 0)")
    assert found.culprits == ("gpu-003",)
    assert found.error_kind == nccl_ras.RANK_DEAD  # the node's own fault, not a slow job


def test_a_dead_rank_on_every_node_blames_none() -> None:
    dead = {1, 9, 17, 25}
    found = nccl_ras.finding(job(dict(hang_report("nccl", NODES, PER_NODE, dead, "all_gather")),
                                 dead).ranks, NODES, PER_NODE)
    assert found is not None and found.culprits == ()
    assert "rank 25 (gpu-004, GPU 1) DEAD" in found.text
    assert found.error_kind == ""  # a fault every node shares: no dead rank's fault


def test_a_one_node_jobs_dead_rank_is_its_nodes_own_fault() -> None:
    """Inside one node the dead rank's node is the job's only one: no culprit to name
    (the case is that node's), but the hang is a dead rank's, not a slow NVLink's."""
    nodes = NODES[2:3]
    report = dict(hang_report("nccl", nodes, PER_NODE, {1}, "all_reduce"))
    ranks = [RankResult(nodes[0], r, r, "killed", None) if r == 1 else
             RankResult(nodes[0], r, r, HANG_EXIT, {"rank": r, "ras": report})
             for r in range(PER_NODE)]
    found = nccl_ras.finding(ranks, nodes, PER_NODE)
    assert found is not None and found.culprits == ()
    assert found.error_kind == nccl_ras.RANK_DEAD
    assert "rank 1 (gpu-003, GPU 1) DEAD" in found.text
    alive = nccl_ras.finding([RankResult(nodes[0], r, r, HANG_EXIT, {"rank": r, "ras": report})
                              for r in range(PER_NODE)], nodes, PER_NODE)
    assert alive is not None and alive.error_kind == ""  # the claim was dropped


def test_a_rank_called_dead_that_reported_for_itself_is_not_blamed() -> None:
    """RAS's claim against what the rank itself printed: the rank's own line wins."""
    report = dict(hang_report("nccl", NODES, PER_NODE, {17}, "all_gather"))
    found = nccl_ras.finding(job(report, set()).ranks, NODES, PER_NODE)
    assert found is not None and found.culprits == ()
    assert "rank 17 (gpu-003, GPU 1) called dead, but reported for itself" in found.text


def test_a_rank_of_another_communicator_is_named_by_its_host_not_placed() -> None:
    report = {"available": True, "dead": [{"rank": 2, "size": 4, "host": "10.0.0.3",
                                           "pid": 9, "gpu": "2"}]}
    found = nccl_ras.finding(job(report, set()).ranks, NODES, PER_NODE)
    assert found is not None and found.culprits == ()
    assert found.text.startswith("NCCL RAS: rank 2 (host 10.0.0.3, GPU 2) DEAD")


def test_missing_and_behind_ranks_are_said_never_blamed() -> None:
    report = {"available": True, "missing": [{"rank": 18, "size": None, "host": "h",
                                              "gpu": "2"}],
              "mismatched": [{"collective": "AllGather", "size": None, "groups": [
                  {"count": 6650, "ranks_count": 29, "ranks": []},
                  {"count": 6649, "ranks_count": 1, "ranks": [18]}]}]}
    found = nccl_ras.finding(job(report, set()).ranks, NODES, PER_NODE)
    assert found is not None and found.culprits == ()
    assert found.text == ("NCCL RAS: rank 18 (gpu-003, GPU 2) missing (INCOMPLETE: no data "
                          "from it); AllGather operation counts differ: 29 ranks at 6650, "
                          "rank 18 at 6649 (asked on gpu-001 by rank 0)")


@pytest.mark.parametrize("report", [
    {"available": False, "reason": "nothing answers at localhost:28028 (Connection refused)"},
    {"available": "yes", "dead": "all of them"}, {"dead": [{"rank": True}]}])
def test_no_answer_or_a_hostile_one_says_RAS_was_not_available(
        report: dict[str, Any]) -> None:
    found = nccl_ras.finding(job(report, set()).ranks, NODES, PER_NODE)
    assert found is not None and found.culprits == () and found.error_kind == ""
    assert found.text.startswith("NCCL RAS not available: ")


def test_no_rank_asked_is_no_finding() -> None:
    ranks = (RankResult("gpu-001", 0, 0, 1, None, "Traceback: boom"),)
    assert nccl_ras.finding(ranks, NODES[:1], 1) is None


def test_the_hang_path_a_collective_rank_asks_RAS_and_its_job_names_the_dead_node(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Rank 0's watchdog past its bound asks the RAS service on its node (the fake, at
    NCCL_RAS_ADDR); its line makes the job's error and culprits."""
    with FakeRas(status_json(NODES, PER_NODE, {17}, "all_gather", 40)) as ras:
        monkeypatch.setenv("NCCL_RAS_ADDR", ras.addr)
        dog = Watchdog(0, 0, len(NODES) * PER_NODE, "nccl", "all_gather")
        dog.doing = "all_gather of 1048576 bytes"
        line = dog.report()
    assert ras.commands[-1] == "VERBOSE STATUS"
    result = job(dict(line["ras"]), {17})
    text, found = hang_failure(result, NODES, PER_NODE)
    assert found is not None and found.culprits == ("gpu-003",)
    assert text.startswith("the job hung: rank 0 (gpu-001) was still at all_gather of "
                           "1048576 bytes after 570.5 s (bound 570 s), as were 30 other "
                           "rank(s); no line from rank 17 (gpu-003); NCCL RAS: rank 17 "
                           "(gpu-003, GPU 1) DEAD")
    fields = failed_run(result, NODES, PER_NODE)
    assert fields["culprits"] == ("gpu-003",) and fields["details"]["nccl_ras"]
    assert fields["error_kind"] == nccl_ras.RANK_DEAD
    assert fields["ras"] == found.text and fields["error"].endswith(found.text)


def test_the_hang_path_without_RAS_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NCCL_RAS_ENABLE", "0")
    line = Watchdog(0, 0, 2, "nccl", "all_reduce").report()
    text, found = hang_failure(job(dict(line["ras"]), set()), NODES, PER_NODE)
    assert found is not None and found.culprits == ()
    assert failed_run(job(dict(line["ras"]), set()), NODES, PER_NODE)["error_kind"] == ""
    assert text.endswith("NCCL RAS not available: NCCL_RAS_ENABLE=0: RAS is disabled "
                         "(asked on gpu-001 by rank 0)")


def test_the_hang_path_of_training_names_the_dead_node(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A training rank's watchdog line carries RAS's answer; the hang's message ends with
    it and the dead rank's node is the run's culprit (its training.ranks case fails)."""
    nodes, per = ("a", "b"), 1
    with FakeRas(status_json(nodes, per, {1}, "all_reduce", 9)) as ras:
        monkeypatch.setenv("NCCL_RAS_ADDR", ras.addr)
        line = Monitor(600.0, 0, None, "nccl").hang_line(7, "wait", 5.3, 5.2, 5.0)
    found = RankResult("a", 0, 0, 3, dict(line), ended_at=10.0,
                       progress={"step": 7, "phase": "wait", "since": 0.0, "beat": 0.0,
                                 "phase_s": 5.2, "silent_s": 0.1})
    stuck = RankResult("b", 1, 0, "killed", None, ended_at=10.5,
                       progress={"step": 7, "phase": "forward", "since": 0.0, "beat": 0.0,
                                 "phase_s": 5.4, "silent_s": 0.2})
    run = summarise(TrainingRun(nodes, per, "nccl", 5.0, stall_s=5.0),
                    JobResult((found, stuck), "a"))
    assert run.hang.endswith("; NCCL RAS: rank 1 (b, GPU 0) DEAD (asked on a by rank 0)")
    assert run.culprits == ("b",)
    without = summarise(TrainingRun(nodes, per, "nccl", 5.0, stall_s=5.0), JobResult((
        RankResult("a", 0, 0, 3, {**line, "ras": {"available": False, "reason": "r"}},
                   progress=found.progress), stuck), "a"))
    assert without.culprits == () and without.hang.endswith("NCCL RAS not available: r "
                                                            "(asked on a by rank 0)")


def test_a_rank_that_died_on_its_own_first_is_the_error_with_RASs_words() -> None:
    """Rank 17 crashed (a signal): the ranks left hung waiting for it. Its own end is the
    job's error (JobResult.own_failure), RAS's words after it; a hang line's figures that
    are no numbers are not repeated."""
    report = dict(hang_report("nccl", NODES, PER_NODE, {17}, "all_gather"))
    ranks = [RankResult(r.node, r.rank, r.local_rank, -9, None, "Killed", ended_at=1.0)
             if r.rank == 17 else r for r in job(report, {17}).ranks]
    fields = failed_run(JobResult(tuple(ranks), "gpu-001"), NODES, PER_NODE)
    assert fields["error"].startswith("gpu-003 rank 17 was killed by SIGKILL (signal 9)")
    assert fields["error"].endswith("NCCL RAS: rank 17 (gpu-003, GPU 1) DEAD (asked on "
                                    "gpu-001 by rank 0)")
    assert fields["culprits"] == ("gpu-003",)
    odd = RankResult("gpu-001", 0, 0, HANG_EXIT, {"hang": {"phase": "x", "waited_s": "1e999",
                                                           "bound_s": float("nan")}})
    text, _ = hang_failure(JobResult((odd,), "gpu-001"), NODES[:1], 1)
    assert text == "the job hung: rank 0 (gpu-001) was still at x after ? s (bound ? s)"


CONFTEST = '''
from pytest_cluster.measure import training

RUN = training.TrainingRun(("a", "b"), 1, "nccl", 5.0, hang="HANG; NCCL RAS: rank 1 (b, GPU 0)"
                           " DEAD (asked on a by rank 0)", hang_s=5.3, stall_s=5.0,
                           silence={"a": 0.1, "b": 0.2}, culprits=CULPRITS)
# the run is in this process (runpytest_inprocess): the real one is put back at its end,
# or every later test of the worker would train into this hang
REAL = training.run
training.run = lambda prober: RUN


def pytest_unconfigure(config):
    training.run = REAL
'''


@pytest.mark.parametrize("culprits", [("b",), ()])
def test_a_training_hangs_dead_node_fails_its_ranks_case(pytester: pytest.Pytester,
                                                          culprits: tuple[str, ...]) -> None:
    """The node NCCL's RAS singles out in a training hang fails its training.ranks case
    with the hang's words; the other node's passes; with none singled out, neither
    fails (their ranks were not silent)."""
    pytester.makeconftest(CONFTEST.replace("CULPRITS", repr(culprits)))
    (pytester.path / "t.yaml").write_text(
        "cluster: {name: t, nodes: [a, b], launcher: local}\ntraining: {step_time: '<= 5 s'}\n")
    result = pytester.runpytest_inprocess("--cluster=t.yaml", "-p", "no:cacheprovider",
                                          "--cluster-reports=reports", "-k", "ranks")
    lines = [json.loads(line) for line in
             (pytester.path / "reports" / "latest" / "results.jsonl").read_text().splitlines()]
    ranks = {r["node"]: r for r in lines if "training_ranks" in str(r.get("nodeid"))}
    assert set(ranks) == {"a", "b"}, result.stdout.str()
    assert ranks["a"]["outcome"] == "passed"
    if culprits:
        assert ranks["b"]["outcome"] == "failed"
        assert "NCCL RAS: rank 1 (b, GPU 0) DEAD" in ranks["b"]["message"]
    else:
        assert ranks["b"]["outcome"] == "passed"

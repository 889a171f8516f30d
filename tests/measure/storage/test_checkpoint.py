"""storage[].checkpoint: the spec, the figures of a burst, and the sim's faults judged end
to end (the job program on this machine: tests/probes/jobs/checkpoint/)."""

from __future__ import annotations

import base64
import dataclasses
import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import pytest

from pytest_cluster.contract import parse_spec
from pytest_cluster.contract.clauses import declared, keys
from pytest_cluster.contract.model import Clause, Rule
from pytest_cluster.errors import ClusterError, SpecError
from pytest_cluster.evidence.verdict.blame import NO_CULPRIT
from pytest_cluster.launchers import jobs
from pytest_cluster.launchers.base import Launcher
from pytest_cluster.launchers.result import ErrorKind, ProbeResult
from pytest_cluster.launchers.sim import SimLauncher
from pytest_cluster.measure.storage import at_once
from pytest_cluster.measure.storage import checkpoint as checkpoint_module
from pytest_cluster.measure.storage.at_once import token
from pytest_cluster.measure.storage.checkpoint import CheckpointRun, run_checkpoint, size_per_writer
from pytest_cluster.measure.storage.checkpoint_claims import RankFigures
from pytest_cluster.measure.storage.claims import (
    MOST_NODE_BYTES_PER_S,
    OBSERVED_SLACK_S,
    held_to_observed,
    node_ceiling,
)
from pytest_cluster.probes import ProbeCall, job_node
from pytest_cluster.probes.jobs import checkpoint as probe
from pytest_cluster.probes.jobs import dataloader as dataloader_probe
from pytest_cluster.probes.jobs import job_source
from pytest_cluster.sim import answers
from pytest_cluster.sim.job_node import read_node_call
from tests.conftest import planned
from tests.test_plugin import jsonl

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
SIM = "sim: {gpu_model: H100-SXM-80GB, gpus_per_node: 8%s}\n"
GPUS = "gpus: {count: 8, model: H100-SXM-80GB}\n"


def spec_text(checkpoint: str, *, shared: str = "true", gpus: bool = True,
              faults: str = "", nodes: str = "n[1-4]") -> str:
    return (f"cluster: {{name: t, nodes: '{nodes}', launcher: sim}}\n"
            f"storage:\n  - path: /shared\n    shared: {shared}\n    checkpoint:\n"
            + "".join(f"      {line}\n" for line in checkpoint.strip().splitlines())
            + (GPUS if gpus else "") + SIM % (f", faults: [{faults}]" if faults else ""))


def error_of(text: str) -> str:
    with pytest.raises(SpecError) as info:
        parse_spec(text, "t.yaml")
    return str(info.value)


# -- the spec --------------------------------------------------------------------------

def test_the_checkpoint_promises_are_the_filesystems_clauses_with_their_basis() -> None:
    spec = parse_spec(spec_text("size_per_gpu: 4 GiB\nwrite: '>= 2 GB/s per GPU'\n"
                                "read: '>= 10 GB/s PER node'\nkeeps_up: 70%"), "t.yaml")
    (fs,) = spec.storage
    assert fs.checkpoint is not None
    assert (fs.checkpoint.size_bytes, fs.checkpoint.per) == (4 * 2**30, "gpu")
    assert fs.checkpoint.basis_of("checkpoint.write") == "gpu"
    assert fs.checkpoint.basis_of("checkpoint.read") == "node"
    write, read, keeps = (fs.item(k) for k in ("checkpoint.write", "checkpoint.read",
                                                "checkpoint.keeps_up"))
    assert isinstance(write, Clause) and write.key == "storage[/shared].checkpoint.write"
    assert write.requirement.bound.value == 2e9
    assert isinstance(read, Clause) and read.requirement.bound.value == 10e9
    # the requirement as written, its basis included (what every view shows)
    assert (write.requirement.text, read.requirement.text) == (">= 2 GB/s per GPU",
                                                               ">= 10 GB/s PER node")
    assert isinstance(keeps, Rule) and "(70%)" in keeps.text
    assert abs(fs.checkpoint.keeps_up - 0.7) < 1e-9


def test_keeps_up_is_on_by_default_and_false_leaves_it_out() -> None:
    on = parse_spec(spec_text("size_per_node: 8 GiB\nwrite: '>= 100 GB/s'"), "t.yaml")
    off = parse_spec(spec_text("size_per_node: 8 GiB\nwrite: '>= 100 GB/s'\nkeeps_up: false"),
                     "t.yaml")
    assert isinstance(on.storage[0].item("checkpoint.keeps_up"), Rule)
    assert on.storage[0].checkpoint is not None and on.storage[0].checkpoint.keeps_up == 0.8
    assert off.storage[0].item("checkpoint.keeps_up") is None
    assert on.storage[0].checkpoint.basis_of("checkpoint.write") == ""  # the aggregate


@pytest.mark.parametrize(("checkpoint", "extra", "message"), [
    ("size_per_gpu: 1 GiB\nsize_per_node: 8 GiB", {},
     "t.yaml:6: storage[/shared].checkpoint.size_per_gpu: expected one of size_per_gpu "
     "(each GPU's shard) or size_per_node (each node's share), not both"),
    ("write: '>= 1 GB/s'", {},
     "t.yaml:6: storage[/shared].checkpoint.size_per_gpu: expected one of size_per_gpu "
     "(each GPU's shard) or size_per_node (each node's share)"),
    ("size_per_gpu: 1 GiB", {"gpus": False},
     "t.yaml:6: storage[/shared].checkpoint.size_per_gpu: needs the gpus section (how many "
     "GPUs each node has); or size_per_node"),
    ("size_per_node: 1 GiB\nwrite: '>= 1 GB/s per GPU'", {"gpus": False},
     "t.yaml:7: storage[/shared].checkpoint.write: a bound per GPU needs the gpus section "
     "(how many GPUs each node has)"),
    ("size_per_node: 1 GiB\nwrite: '>= 1 GB/s per rack'", {},
     "t.yaml:7: storage[/shared].checkpoint.write: expected a rate like '10 GB/s', got "
     "'>= 1 GB/s per rack'; per GPU, per node or the cluster's aggregate: '>= 10 GB/s per "
     "GPU', '>= 10 GB/s per node', '>= 10 GB/s'"),
    ("size_per_node: 1 GiB", {"shared": "false"},
     "t.yaml:6: storage[/shared].checkpoint: a checkpoint is written and read back by every "
     "node at once on a shared filesystem: needs shared: true"),
    ("size_per_node: 1 KiB", {},
     "t.yaml:6: storage[/shared].checkpoint.size_per_node: expected a size from 1 MiB to "
     "1 TiB, got '1 KiB'"),
    ("size_per_node: 1 GiB\nkeeps_up: 2", {},
     "t.yaml:7: storage[/shared].checkpoint.keeps_up: expected a share of the nodes' median "
     "like 80% (or false), got '2'"),
])
def test_checkpoint_errors_are_exact(checkpoint: str, extra: dict[str, Any],
                                     message: str) -> None:
    assert error_of(spec_text(checkpoint, **extra)) == message


def test_an_unknown_checkpoint_key_lists_the_declared_ones() -> None:
    message = error_of(spec_text("size_per_node: 1 GiB\nwirte: '>= 1 GB/s'"))
    assert message == ("t.yaml:7: storage[/shared].checkpoint.wirte: unknown key; did you "
                       f"mean 'write'? (known keys: {', '.join(keys('storage', 'checkpoint'))})")
    assert "checkpoint.write" not in keys("storage")  # a key of the map, not of storage
    assert declared("storage.checkpoint.write").written_as == "write"


# -- the figures of a burst ------------------------------------------------------------

def figures(node: str, rank: int, size: int, seconds: float, bad: int = 0) -> RankFigures:
    return RankFigures(node, rank, size, seconds, 0.0, seconds, 0.0, 0.0, bad)


def test_a_nodes_rate_is_over_its_slowest_writer_and_the_aggregate_over_the_slowest_node(
        ) -> None:
    ranks = (figures("a", 0, 100, 1.0), figures("a", 1, 100, 2.0),
             figures("b", 2, 100, 1.0), figures("b", 3, 100, 1.0))
    run = CheckpointRun(("a", "b"), 2, 100, 10, "/s", write=ranks)
    assert run.node_rate("write", "a") == 100 and run.node_rate("write", "b") == 200
    assert run.aggregate("write") == 400 / 2.0 and run.duration("write") == 2.0
    assert run.aggregate("read") is None  # no node read
    missing = CheckpointRun(("a", "b", "c"), 2, 100, 10, "/s", write=ranks)
    assert missing.aggregate("write") is None  # c measured nothing: not established


def test_a_runs_document_keeps_the_launchers_error_kinds_and_reads_without_them() -> None:
    run = CheckpointRun(("a", "b"), 1, 100, 10, "/s", errors=(("b", "write: gone"),),
                        error_kinds=(("b", "unreachable"),))
    again = CheckpointRun.from_json(json.loads(json.dumps(run.to_json())))
    assert again == run and again.node_kind("b") == "unreachable" and again.node_kind("a") == ""
    older = {k: v for k, v in run.to_json().items() if k != "error_kinds"}
    assert CheckpointRun.from_json(older).error_kinds == ()


def test_a_nodes_share_is_split_among_its_writers_in_whole_pages() -> None:
    spec = parse_spec(spec_text("size_per_node: 1 GiB"), "t.yaml").storage[0].checkpoint
    assert spec is not None and size_per_writer(spec, 8) == 2**30 // 8
    assert size_per_writer(spec, 3) % 4096 == 0


# -- judged end to end on the sim ------------------------------------------------------

def run(pytester: pytest.Pytester, text: str) -> dict[str, dict[str, Any]]:
    path = pytester.path / "t.yaml"
    path.write_text(text, encoding="utf-8")
    pytester.runpytest(f"--cluster={path}", "-p", "no:cacheprovider", "-k",
                       "checkpoint or dataloader")
    return {r["nodeid"].split("::")[-1]: r for r in jsonl(pytester)
            if r.get("type") == "result"}


def verdicts(pytester: pytest.Pytester) -> dict[str, str]:
    found = json.loads((pytester.path / "reports" / "latest" / "verdict.json").read_text())
    return {item["node"]: item["verdict"] for item in found["nodes"]}


@pytest.mark.slow
def test_the_storage_example_fails_exactly_the_slow_client_and_the_far_node(
        pytester: pytest.Pytester) -> None:
    path = EXAMPLES / "sim-h100-storage-faulty.yaml"
    pytester.runpytest(f"--cluster={path}", "-p", "no:cacheprovider")
    failed = {r["nodeid"].split("::")[-1] for r in jsonl(pytester)
              if r.get("type") == "result" and r["outcome"] != "passed"}
    assert failed == {"test_storage_checkpoint_write[/shared]",
                      "test_storage_checkpoint_read[/shared]",
                      "test_storage_checkpoint_keeps_up[sim-gpu-03-/shared]",
                      "test_storage_dataloader_keeps_up[sim-gpu-03-/shared]",
                      "test_latency[sim-gpu-04]", "test_colocation[sim-gpu-04]"}
    assert verdicts(pytester) == {"sim-gpu-01": "ACCEPTED", "sim-gpu-02": "ACCEPTED",
                                  "sim-gpu-03": "REJECTED", "sim-gpu-04": "REJECTED"}
    records = {r["nodeid"].split("::")[-1]: r for r in jsonl(pytester)
               if r.get("type") == "result"}
    write = records["test_storage_checkpoint_write[/shared]"]
    assert write["culprits"] == "sim-gpu-03" and write["unit"] == "GB/s"
    assert write["raw"]["slowest"][0] == "sim-gpu-03" and write["simulated"] is True
    # every node at half the others: 4 nodes' bytes over the slow one's time, per GPU
    nominal = write["raw"]["median_node_bytes_per_s"] / 8
    assert write["measured_base"] == pytest.approx(nominal / 2 * 4 / 4, rel=0.05)


def test_a_node_reading_blocks_not_as_written_is_named_whatever_its_rate(
        pytester: pytest.Pytester) -> None:
    records = run(pytester, spec_text("size_per_gpu: 1 GiB\nread: '>= 1 GB/s per GPU'",
                                      faults="{node: n2, storage_corrupt: true}"))
    read = records["test_storage_checkpoint_read[/shared]"]
    assert read["outcome"] == "failed" and read["culprits"] == "n2"
    assert read["requirement"] == ">= 1 GB/s per GPU"
    assert read["measured_base"] == pytest.approx(read["raw"]["aggregate_bytes_per_s"] / 32)
    assert read["method"].endswith("; per GPU = the aggregate / 32 GPU(s) (4 node(s) x "
                                   "gpus.count 8)")
    assert "block(s) read back not as written, on n2" in read["message"]
    assert records["test_storage_checkpoint_keeps_up[n2-/shared]"]["outcome"] == "failed"
    assert {n for n, r in records.items() if r["outcome"] == "failed"} == {
        "test_storage_checkpoint_read[/shared]", "test_storage_checkpoint_keeps_up[n2-/shared]"}


def test_a_corrupt_reader_and_a_slow_one_are_both_said_with_the_number_missed(
        pytester: pytest.Pytester) -> None:
    """n3 reads blocks back wrong and n2 reads at half speed, so the aggregate also misses
    its bound: the one message says both, the corruption on n3 and the number the rate
    missed by, held back by n2 (the slow node is blamed for a number it is told)."""
    records = run(pytester, spec_text(
        "size_per_gpu: 1 GiB\nread: '>= 2 GB/s per GPU'",
        faults="{node: n2, storage_factor: 0.5}, {node: n3, storage_corrupt: true}"))
    read = records["test_storage_checkpoint_read[/shared]"]
    assert read["outcome"] == "failed" and read["culprits"] == "n2,n3"
    assert read["measured_base"] < 2e9
    message = read["message"]
    assert message.startswith("Failed: [SIMULATED] all /shared read: "), message
    corrupt, missed = message.split(" read: ", 1)[1].split("; measured ", 1)
    assert corrupt.endswith(" block(s) read back not as written, on n3"), message
    assert " < required 2 GB/s per GPU (" in missed and missed.endswith("; held back by n2")
    assert verdicts(pytester) == {"n1": "ACCEPTED", "n2": "REJECTED", "n3": "REJECTED",
                                  "n4": "ACCEPTED"}


@pytest.mark.parametrize("keeps_up", ["keeps_up: false", "keeps_up: 80%"])
def test_a_corrupt_reader_is_rejected_though_another_node_is_down(
        pytester: pytest.Pytester, keeps_up: str) -> None:
    """n3 down leaves the aggregate not established; n2 read blocks back wrong all the
    same, and that fails the read naming n2 (it was ACCEPTED with keeps_up false: the
    read said only that n3 was missing, and nothing said the corruption)."""
    records = run(pytester, spec_text(
        f"size_per_gpu: 1 GiB\nread: '>= 1 GB/s per GPU'\n{keeps_up}",
        faults="{node: n2, storage_corrupt: true}, {node: n3, down: true}"))
    read = records["test_storage_checkpoint_read[/shared]"]
    assert (read["outcome"], read["error_kind"], read["culprits"]) == (
        "failed", "read_back_wrong", "n2")
    assert read["message"].startswith(
        "Failed: [SIMULATED] all /shared read: 512 block(s) read back not as written, on "
        "n2; and 1 of 4 node(s) did not read their share (n3: host probe unreachable"), \
        read["message"]
    assert [n for n, v in verdicts(pytester).items() if v == "REJECTED"] == ["n2"]


def test_a_slow_filesystem_fails_the_aggregate_and_blames_no_node(
        pytester: pytest.Pytester) -> None:
    text = spec_text("size_per_node: 8 GiB\nwrite: '>= 100 GB/s'").replace(
        "gpus_per_node: 8", "gpus_per_node: 8, storage_rate: 40 GB/s")
    records = run(pytester, text)
    write = records["test_storage_checkpoint_write[/shared]"]
    assert write["outcome"] == "failed" and "culprits" not in write
    assert write["measured_base"] == pytest.approx(40e9, rel=0.05)
    assert all(r["outcome"] == "passed" for n, r in records.items() if "keeps_up" in n)
    assert set(verdicts(pytester).values()) == {"ACCEPTED"}


def test_a_silent_node_is_where_the_shared_file_could_not_be_read(
        pytester: pytest.Pytester) -> None:
    path = pytester.path / "t.yaml"
    path.write_text(spec_text("size_per_node: 8 GiB", faults="{node: n3, down: true}"),
                    encoding="utf-8")
    pytester.runpytest(f"--cluster={path}", "-p", "no:cacheprovider", "-k",
                       "test_storage_shared")
    [shared] = [r for r in jsonl(pytester) if r.get("type") == "result"]
    assert shared["outcome"] == "failed" and shared["raw"]["silent"][0].startswith("n3: ")
    # not established, as "the same on every node" is: n3's own verdict says it is silent
    assert shared["error_kind"] == "not_all_nodes"
    assert shared["message"].startswith(
        "Failed: [SIMULATED] all /shared shared: a file written on n1 is seen on 3 of 4 "
        "nodes; 1 did not answer (n3: shared_fs probe unreachable")
    assert shared["message"].endswith("), so seen on every node is not established")


def test_a_silent_node_fails_its_own_case_and_leaves_the_aggregate_not_established(
        pytester: pytest.Pytester) -> None:
    records = run(pytester, spec_text("size_per_node: 8 GiB\nwrite: '>= 1 GB/s'",
                                      faults="{node: n3, down: true}"))
    write = records["test_storage_checkpoint_write[/shared]"]
    assert write["outcome"] == "failed" and write["error_kind"] == "not_all_nodes"
    assert "1 of 4 node(s) did not write their share (n3" in write["message"]
    assert records["test_storage_checkpoint_keeps_up[n3-/shared]"]["error_kind"] == \
        "unreachable"
    assert all(records[f"test_storage_checkpoint_keeps_up[{n}-/shared]"]["outcome"] ==
               "passed" for n in ("n1", "n2", "n4"))
    assert verdicts(pytester)["n1"] == "ACCEPTED"


@pytest.mark.slow
def test_a_real_burst_on_this_machine_passes_and_leaves_nothing(
        pytester: pytest.Pytester, tmp_path: Path) -> None:
    folder = tmp_path / "shared"
    folder.mkdir()
    path = pytester.path / "t.yaml"
    text = ("cluster: {name: local, nodes: localhost, launcher: local}\n"
            f"storage:\n  - path: {folder}\n    shared: true\n    checkpoint:\n"
            "      size_per_node: 32 MiB\n      block_size: 4 MiB\n"
            "      write: '>= 1 MB/s'\n      read: '>= 1 MB/s per node'\n")
    path.write_text(text, encoding="utf-8")
    result = pytester.runpytest(f"--cluster={path}", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=len(planned(pytester, text)))  # every case of the spec
    records = {r["nodeid"].split("::")[-1]: r for r in jsonl(pytester)
               if r.get("type") == "result"}
    write = records[f"test_storage_checkpoint_write[{folder}]"]
    assert write["raw"]["total_bytes"] == 32 * 2**20 and write["measured_base"] > 1e6
    assert "its own, its cached pages dropped first" in write["method"]
    assert "simulated" not in write or write["simulated"] is False
    assert list(folder.iterdir()) == []


# -- the burst's jobs, each node's part run here (a node may not answer) ----------------

class Nodes(Launcher):
    """Runs each node's part of a checkpoint (or data loader) job on this machine, its
    ranks one after the other (a real job_node's answer); the nodes in `down[phase]` do
    not answer that phase (a writer killed mid-write leaves part of its file)."""

    name = "fake"

    def __init__(self, down: dict[str, set[str]]) -> None:  # no spec: nothing to set up
        self.down = down
        self.parts: list[tuple[str, str, dict[str, str]]] = []

    def run(self, call: ProbeCall, nodes: Sequence[str],
            timeout_s: float) -> dict[str, ProbeResult]:
        (node,) = nodes
        part = read_node_call(call.args)
        assert part is not None and part.master_addr == "127.0.0.1"  # nobody asked
        args = dict(zip(part.rank_args[::2], part.rank_args[1::2], strict=True))
        self.parts.append((args["--phase"], node, args))
        world = part.nnodes * part.ranks_per_node
        ranks = [part.node_rank * part.ranks_per_node + local
                 for local in range(part.ranks_per_node)]
        if node in self.down.get(args["--phase"], set()):
            if args["--phase"] == "write":
                shipped = dataloader_probe if part.program == job_source("dataloader") \
                    else probe
                for rank in ranks:
                    Path(shipped.file_of(args["--path"], args["--token"], rank)).write_bytes(
                        b"x" * 5000)
            return {node: ProbeResult(node, "job_node", None, ErrorKind.UNREACHABLE,
                                      "ssh: connection refused (no sshd?)")}
        found = []
        for local, rank in enumerate(ranks):
            done = subprocess.run([sys.executable, "-c", part.program, *part.rank_args],
                                  env={**os.environ, "RANK": str(rank),
                                       "WORLD_SIZE": str(world)},
                                  capture_output=True, text=True, timeout=60, check=False)
            found.append({"rank": rank, "local_rank": local, "exit_code": done.returncode,
                          "ended_at": time.time(), "stderr_tail": done.stderr[-2000:],
                          "data": json.loads(done.stdout.strip().splitlines()[-1])})
        return {node: ProbeResult(node, "job_node", {"ranks": found, "killed_because": "",
                                                     "gloo_socket_ifname": None})}


def burst_here(folder: Path, down: dict[str, set[str]],
               monkeypatch: pytest.MonkeyPatch) -> tuple[CheckpointRun, Nodes]:
    monkeypatch.setattr(at_once, "LEAD_S", 0.0)
    (fs,) = parse_spec(
        "cluster: {name: t, nodes: 'a,b,c', launcher: local}\n"
        f"storage:\n  - path: {folder}\n    shared: true\n    checkpoint:\n"
        "      size_per_node: 2 MiB\n      block_size: 256 KiB\n"
        "      write: '>= 1 MB/s'\n", "t.yaml").storage
    nodes = Nodes(down)
    return run_checkpoint(nodes, fs, ["a", "b", "c"], 2, {}), nodes


def test_a_node_lost_in_the_write_is_its_own_and_the_others_read_each_others_files(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run, nodes = burst_here(tmp_path, {"write": {"b"}}, monkeypatch)
    assert run.node_kind("b") == "unreachable" and run.node_kind("a") == ""
    assert run.node_error("b") == \
        "write: job_node probe unreachable: ssh: connection refused (no sshd?)"
    # the read job: the nodes that wrote, each reading the same GPU's file of the next
    reads = [(node, args.get("--write-nodes")) for phase, node, args in nodes.parts
             if phase == "read"]
    assert reads == [("a", "0,2"), ("c", "0,2")]
    assert {(r.node, r.rank, r.writer, r.bad_blocks) for r in run.read} == {
        ("a", 0, 4, 0), ("a", 1, 5, 0), ("c", 2, 0, 0), ("c", 3, 1, 0)}
    assert set(run.node_figures("read")) == {"a", "c"} and run.aggregate("read") is None
    # b's partial files are removed by the first node that answered
    assert run.details["removed"] == {"node": "a", "files": 2}
    assert list(tmp_path.iterdir()) == []


def test_the_first_node_lost_leaves_the_others_phases_and_the_removal_to_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run, nodes = burst_here(tmp_path, {"write": {"a"}, "remove": {"a"}}, monkeypatch)
    assert set(run.node_figures("write")) == set(run.node_figures("read")) == {"b", "c"}
    assert [e for e in run.errors if e[0] != "a"] == []
    assert [node for phase, node, _ in nodes.parts if phase == "remove"] == ["b"]
    assert run.details["removed"] == {"node": "b", "files": 2}
    assert list(tmp_path.iterdir()) == []


def test_a_removal_no_node_can_make_is_said(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    run, _ = burst_here(tmp_path, {"remove": {"a", "b", "c"}}, monkeypatch)
    assert run.details["remove_error"].count("job_node probe unreachable") == 3
    assert "removed" not in run.details


class Refusing(Nodes):
    """A launcher that raises before any node's part starts (a tool error)."""

    def run(self, call: ProbeCall, nodes: Sequence[str],
            timeout_s: float) -> dict[str, ProbeResult]:
        raise ClusterError("the launcher broke before starting the job")


def test_a_phase_the_tool_could_not_start_blames_no_node(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(at_once, "LEAD_S", 0.0)
    (fs,) = parse_spec(
        "cluster: {name: t, nodes: 'a,b', launcher: local}\n"
        f"storage:\n  - path: {tmp_path}\n    shared: true\n    checkpoint:\n"
        "      size_per_node: 2 MiB\n      write: '>= 1 MB/s'\n", "t.yaml").storage
    run = run_checkpoint(Refusing({}), fs, ["a", "b"], None, {})
    assert [run.node_kind(n) for n in ("a", "b")] == ["undecided", "undecided"]
    assert run.node_error("a") == "write: the launcher broke before starting the job"
    assert "undecided" in NO_CULPRIT


def test_a_write_whose_node_part_is_stopped_removes_its_partial_file(tmp_path: Path) -> None:
    """SIGTERM to job_node (the node runner ending the probe: a dropped connection, a
    pytest stopped) gives the writers their SIGTERM before SIGKILL: each removes its
    partial file (job_node SIGKILLed them at once, which left it on the filesystem)."""
    tag = token(60)
    program = base64.b64encode(job_source("checkpoint").encode()).decode()
    process = subprocess.Popen(
        [sys.executable, str(Path(job_node.__file__)), "--master-addr", "127.0.0.1",
         "--master-port", "29999", "--node-rank", "0", "--nnodes", "1", "--ranks-per-node",
         "2", "--init-timeout", "30", "--wall-timeout", "600", "--program", program, "--",
         "--phase", "write", "--path", str(tmp_path), "--token", tag, "--size", str(2**40),
         "--block", str(2**20), "--ranks-per-node", "2"], stdout=subprocess.PIPE)
    targets = [tmp_path / f"{probe.PREFIX}{tag}-{rank}" for rank in range(2)]
    deadline = time.monotonic() + 60
    while not all(t.exists() and t.stat().st_size > 0 for t in targets):
        assert time.monotonic() < deadline, "the writes did not start"
        time.sleep(0.01)
    process.terminate()
    assert process.wait(30) == 128 + 15
    assert list(tmp_path.iterdir()) == []


def verdict_document(pytester: pytest.Pytester) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(
        (pytester.path / "reports" / "latest" / "verdict.json").read_text())
    return found


@pytest.mark.parametrize(("error", "text"), [("ENOSPC", "No space left on device"),
                                             ("EIO", "Input/output error"),
                                             ("ENOENT", "No such file or directory")])
def test_a_storage_fault_every_node_sees_fails_the_filesystem_and_drains_none(
        pytester: pytest.Pytester, error: str, text: str) -> None:
    """The export full, the server gone, the path missing: every node's write fails the
    same way. The aggregates fail as the filesystem's (a cluster failure naming it and
    the cause); no node's keeps_up is failed against it (all 4 were REJECTED and
    drained for job_failed)."""
    faults = ", ".join(f"{{node: n{i}, storage_error: {error}}}" for i in range(1, 5))
    records = run(pytester, spec_text("size_per_gpu: 1 GiB\nwrite: '>= 1 GB/s per GPU'\n"
                                      "read: '>= 1 GB/s per GPU'", faults=faults))
    for phase in ("write", "read"):
        aggregate = records[f"test_storage_checkpoint_{phase}[/shared]"]
        assert (aggregate["outcome"], aggregate["error_kind"], aggregate["node"]) == (
            "failed", "cannot_measure", "all")
        assert "culprits" not in aggregate
        assert aggregate["message"].startswith(
            f"Failed: [SIMULATED] all /shared {phase}: cannot measure: the checkpoint burst "
            "failed on every node, a fault of the filesystem they share: n1: write: rank 0: "
            f"write on /shared: {text}"), aggregate["message"]
    keeps = [r for n, r in records.items() if "keeps_up" in n]
    assert keeps and {(r["outcome"], r["error_kind"]) for r in keeps} == {
        ("failed", "undecided")}
    document = verdict_document(pytester)
    assert document["drain"] == []
    assert {n["verdict"] for n in document["nodes"]} == {"NOT CHECKED"}
    assert {f["clause"] for f in document["cluster_checks_failed"]} >= {
        "storage[/shared].checkpoint.write", "storage[/shared].checkpoint.read"}


def test_a_node_without_the_mount_fails_alone_and_its_files_reader_is_not_blamed(
        pytester: pytest.Pytester) -> None:
    """n3's path is a local directory: its writes succeed there, no other node finds
    them, and it finds none of theirs. n3 fails its keeps_up; n2, which was to read n3's
    file, is not judged on it (it was REJECTED), and storage.shared names n3."""
    text = spec_text("size_per_gpu: 1 GiB\nread: '>= 1 GB/s per GPU'",
                     faults="{node: n3, storage_unmounted: true}")
    path = pytester.path / "t.yaml"
    path.write_text(text, encoding="utf-8")
    pytester.runpytest(f"--cluster={path}", "-p", "no:cacheprovider")
    records = {r["nodeid"].split("::")[-1]: r for r in jsonl(pytester)
               if r.get("type") == "result"}
    mine = records["test_storage_checkpoint_keeps_up[n3-/shared]"]
    assert (mine["outcome"], mine["error_kind"]) == ("failed", "job_failed")
    assert "n3 does not see the files the other nodes wrote, nor they its own" in \
        mine["message"]
    reader = records["test_storage_checkpoint_keeps_up[n2-/shared]"]
    assert (reader["outcome"], reader["error_kind"]) == ("failed", "undecided")
    assert "the files n2 was to read were written on n3, which does not see the shared " \
        "filesystem" in reader["message"]
    assert [records[f"test_storage_checkpoint_keeps_up[{n}-/shared]"]["outcome"]
            for n in ("n1", "n4")] == ["passed", "passed"]
    shared = records["test_storage_shared[/shared]"]
    assert shared["outcome"] == "failed" and shared["raw"]["missing"] == ["n3"]
    document = verdict_document(pytester)
    assert [n["node"] for n in document["nodes"] if n["verdict"] == "REJECTED"] == ["n3"]
    assert [line for line in document["drain"] if "NodeName=n3 " in line] == \
        document["drain"] != []


def test_a_shared_file_no_node_can_write_is_the_filesystems_failure(
        pytester: pytest.Pytester) -> None:
    """Every node's write of the shared file fails (the export full): storage.shared
    fails as a cluster check, no node named (the last node tried was blamed)."""
    faults = ", ".join(f"{{node: n{i}, storage_error: ENOSPC}}" for i in range(1, 5))
    path = pytester.path / "t.yaml"
    path.write_text(spec_text("size_per_node: 8 GiB", faults=faults), encoding="utf-8")
    pytester.runpytest(f"--cluster={path}", "-p", "no:cacheprovider", "-k",
                       "test_storage_shared")
    [shared] = [r for r in jsonl(pytester) if r.get("type") == "result"]
    assert (shared["outcome"], shared["node"], shared["error_kind"]) == (
        "failed", "all", "cannot_measure")
    assert "no node could write the shared file, a fault of the filesystem they share " \
        "(the last tried, n4: write /shared/.pytest-cluster-shared-" in shared["message"]
    assert verdict_document(pytester)["drain"] == []


def test_a_later_burst_removes_what_earlier_ones_left_and_says_it(
        pytester: pytest.Pytester, tmp_path: Path) -> None:
    """Files a killed burst left: the next burst removes those whose burst has ended and
    says so (count and bytes, a LeftoverWarning); one of a burst that may still run is
    said and left alone (both were unsaid)."""
    folder = tmp_path / "shared"
    folder.mkdir()
    old = folder / f"{probe.PREFIX}{int(time.time()) - 5}-0123456789ab-3"
    running = folder / f"{probe.PREFIX}{int(time.time()) + 3600}-abcdef012345-0"
    old.write_bytes(b"x" * 8192)
    running.write_bytes(b"y" * 700)
    path = pytester.path / "t.yaml"
    text = ("cluster: {name: local, nodes: localhost, launcher: local}\n"
            f"storage:\n  - path: {folder}\n    shared: true\n    checkpoint:\n"
            "      size_per_node: 1 MiB\n      block_size: 1 MiB\n"
            "      write: '>= 1 kB/s'\n")
    path.write_text(text, encoding="utf-8")
    result = pytester.runpytest(f"--cluster={path}", "-p", "no:cacheprovider", "-k",
                                "checkpoint")
    result.assert_outcomes(passed=len(planned(pytester, text, "-k", "checkpoint")))
    result.stdout.fnmatch_lines([
        f"*LeftoverWarning: removed 1 file(s) (8 KiB) earlier checkpoint bursts left in "
        f"{folder}; found 1 file(s) of other checkpoint bursts in {folder}: another "
        "burst's, which may still be running until * UTC: left alone, removed by a later "
        "burst after that"])
    [write] = [r for r in jsonl(pytester) if r.get("type") == "result"]
    assert write["leftovers_removed"] == {"files": 1, "bytes": 8192}
    assert [(item["path"], item["removed"]) for item in write["leftovers"]] == [
        (str(old), True), (str(running), False)]
    assert list(folder.iterdir()) == [running]


class Apart(Nodes):
    """Nodes whose path is each a directory of its own (`path/<node>`): not one
    filesystem, as where `shared: true` is not so."""

    def run(self, call: ProbeCall, nodes: Sequence[str],
            timeout_s: float) -> dict[str, ProbeResult]:
        (node,) = nodes
        at = call.args.index("--path") if "--path" in call.args else -1
        args = list(call.args)
        if at >= 0:
            args[at + 1] = os.path.join(args[at + 1], node)
        return super().run(ProbeCall(call.name, tuple(args)), nodes, timeout_s)


def test_a_path_that_is_not_one_filesystem_leaves_no_nodes_files(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each node's path its own directory: every reader finds no file (the burst fails
    everywhere, the filesystem's fault), and every node removes its own files (the one
    node that removed left each other node's 24 MiB)."""
    monkeypatch.setattr(at_once, "LEAD_S", 0.0)
    for node in "abc":
        (tmp_path / node).mkdir()
    (fs,) = parse_spec(
        "cluster: {name: t, nodes: 'a,b,c', launcher: local}\n"
        f"storage:\n  - path: {tmp_path}\n    shared: true\n    checkpoint:\n"
        "      size_per_node: 2 MiB\n      block_size: 256 KiB\n"
        "      write: '>= 1 MB/s'\n", "t.yaml").storage
    run = run_checkpoint(Apart({}), fs, ["a", "b", "c"], 2, {})
    assert {r.errno for r in run.read} == {"ENOENT"}
    assert run.shared_fault().startswith("a: read: rank 0: read on ")
    assert run.not_shared == set()  # every node alike: none singled out
    assert run.details["removed_elsewhere"] == {"files": 4, "nodes": 2}
    assert [list(p.iterdir()) for p in sorted(tmp_path.iterdir())] == [[], [], []]


# -- a node's claims are checked, not believed (issue 48) -----------------------------

def _phase_of(args: Sequence[str]) -> str:
    return dict(zip(args[::2], args[1::2], strict=False)).get("--phase", "")


def lying(monkeypatch: pytest.MonkeyPatch, phase: str, lie: Any, liar: str = "n2") -> None:
    """The sim's checkpoint answers, `liar`'s ranks of `phase` changed by `lie` (a rank's
    data, changed in place)."""
    plain = answers.JOBS["checkpoint"]

    def told(sim: Any, ic: Any, nodes: Any, part: Any) -> Any:
        parts = plain(sim, ic, nodes, part)
        if _phase_of(part.rank_args) == phase:
            for ranks in parts:
                for rank in ranks:
                    data = cast("dict[str, Any]", rank["data"])
                    if data and data.get("host") == liar:
                        lie(data)
        return parts

    monkeypatch.setitem(answers.JOBS, "checkpoint", told)


def answering(monkeypatch: pytest.MonkeyPatch, phase: str, payload: Any,
              liar: str = "n2") -> None:
    """`liar`'s whole answer to `phase`'s job replaced by `payload(answer)`."""
    plain = SimLauncher.job_node

    def told(self: SimLauncher, call: ProbeCall, node: str) -> Any:
        found = plain(self, call, node)
        part = read_node_call(call.args)
        if node == liar and part is not None and _phase_of(part.rank_args) == phase \
                and isinstance(found, dict) and "ranks" in found:
            return payload(found)
        return found

    monkeypatch.setattr(SimLauncher, "job_node", told)


TWO = spec_text("size_per_node: 1 GiB\nwrite: '>= 1 GB/s'\nread: '>= 1 GB/s'",
                nodes="n[1-2]")
#: Each lie of n2's: the phase it lies in, how, and what its own case says of it.
LIES: dict[str, tuple[str, Any, str]] = {
    "1000x the bytes written": ("write", lambda d: d.update(bytes=d["bytes"] * 1000),
                                "bytes written, not the 134217728 it was asked to"),
    "1e300 bytes written": ("write", lambda d: d.update(bytes=1e300),
                            "bytes written, not the 134217728 it was asked to"),
    "near-zero seconds writing": ("write", lambda d: d.update(seconds=1e-9),
                                  "above the ceiling 10000 GB/s"),
    "no seconds at all writing": ("write", lambda d: d.update(seconds=0),
                                  "is an infinite rate, above the ceiling"),
    "near-zero seconds reading": ("read", lambda d: d.update(seconds=1e-9),
                                  "above the ceiling 10000 GB/s"),
    "1000x the bytes read": ("read", lambda d: d.update(bytes=d["bytes"] * 1000),
                             "a read-back reads it whole"),
    "a read-back of writer 999": ("read", lambda d: d.update(writer=999),
                                  "it read back writer 999's file, not writer 0's"),
    "a 0-byte read-back with no bad block": (
        "read", lambda d: d.update(bytes=0, file_bytes=0, bad_blocks=0),
        "yet counts 0 block(s) bad"),
    "a short read of a whole file": ("read", lambda d: d.update(bytes=4096, bad_blocks=0),
                                     "a read-back reads it whole"),
    "a digest not of the data written": ("read", lambda d: d.update(digest="0" * 32),
                                         "is not that of the data written"),
    "no digest": ("read", lambda d: d.pop("digest"), "is not that of the data written"),
}


def judged_two(pytester: pytest.Pytester) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    records = run(pytester, TWO)
    return records, verdicts(pytester)


def honest_accepted_liar_rejected(records: dict[str, dict[str, Any]],
                                  found: dict[str, str], said: str) -> None:
    liar = records["test_storage_checkpoint_keeps_up[n2-/shared]"]
    honest = records["test_storage_checkpoint_keeps_up[n1-/shared]"]
    assert found == {"n1": "ACCEPTED", "n2": "REJECTED"}, (found, liar["message"])
    assert honest["outcome"] == "passed", honest["message"]
    assert liar["error_kind"] == "bad_output" and said in liar["message"], liar["message"]
    for record in records.values():  # no figure of the liar's reaches any number said
        text = f"{record.get('message')} {record.get('measured')}"
        assert "inf" not in text.replace("infinite", "") and "nan" not in text, text


@pytest.mark.parametrize("lie", LIES)
def test_a_lying_node_is_rejected_and_the_honest_one_accepted(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, lie: str) -> None:
    """Two nodes, n2's answer lying: n2 fails as bad output naming what it claimed and
    what bounds it; n1 keeps up (its figures are the median's only) and is ACCEPTED (it
    was REJECTED, the liar ACCEPTED, with aggregates of inf GB/s)."""
    phase, change, said = LIES[lie]
    lying(monkeypatch, phase, change)
    honest_accepted_liar_rejected(*judged_two(pytester), said)


#: n2's whole answer to a phase's job, not its ranks' records.
PAYLOADS: dict[str, tuple[str, Any, str]] = {
    "no ranks": ("write", lambda p: {k: v for k, v in p.items() if k != "ranks"},
                 "its answer has no list of ranks (ranks is NoneType)"),
    "ranks as a map": ("read", lambda p: {**p, "ranks": {"0": p["ranks"][0]}},
                       "its answer has no list of ranks (ranks is dict)"),
    "garbage rank entries": ("read", lambda p: {**p, "ranks": [1, "x", None]},
                             "ranks[0] is no rank's record (int)"),
    "another node's rank numbers": ("write", lambda p: {**p, "ranks": [
        {**r, "rank": r["rank"] - 8} for r in p["ranks"]]},
        "ranks[0] says rank 0, not one of this node's ranks 8 to 15"),
}


@pytest.mark.parametrize("payload", PAYLOADS)
def test_a_node_answer_that_is_not_its_ranks_fails_that_node_as_bad_output(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, payload: str) -> None:
    """A node's answer with no `ranks`, `ranks` as a map, garbage entries or another
    node's ranks is its own part's bad output, said (it was a KeyError or AttributeError,
    a tool fault that left both nodes NOT CHECKED)."""
    phase, change, said = PAYLOADS[payload]
    answering(monkeypatch, phase, change)
    honest_accepted_liar_rejected(*judged_two(pytester), said)


def test_a_file_that_read_back_short_disproves_its_writer_not_its_reader(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """n1 reads n2's files back short (n2 claimed what it did not write): n2 fails as bad
    output (its write not proven, its figure in no median); n1, which could not read what
    was not written, is not judged on it (NOT CHECKED), never rejected."""
    def short(data: dict[str, Any]) -> None:
        data.update(bytes=4096, file_bytes=4096, bad_blocks=8)
        data.pop("digest", None)

    lying(monkeypatch, "read", short, liar="n1")
    records, found = judged_two(pytester)
    liar = records["test_storage_checkpoint_keeps_up[n2-/shared]"]
    assert found == {"n1": "NOT CHECKED", "n2": "REJECTED"}, (found, liar["message"])
    assert liar["error_kind"] == "bad_output"
    assert "writer 8's file is 4096 bytes, not the 134217728 its writer said it wrote " \
           "(read back on n1)" in liar["message"]
    reader = records["test_storage_checkpoint_keeps_up[n1-/shared]"]
    assert "did not write them as it claimed" in reader["message"]


def test_a_file_not_there_for_its_reader_disproves_a_writer_that_sees_the_others(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """n2 claims its writes, but n1 finds none of its files while n2 found n1's: n2's
    write is not proven (it fails as bad output); n1 is not judged on files never
    written."""
    def gone(data: dict[str, Any]) -> None:
        writer = data["writer"]
        data.clear()
        data.update(error="read on /shared: No such file or directory", errno="ENOENT",
                    writer=writer, host="n1")

    lying(monkeypatch, "read", gone, liar="n1")
    records, found = judged_two(pytester)
    liar = records["test_storage_checkpoint_keeps_up[n2-/shared]"]
    assert found == {"n1": "NOT CHECKED", "n2": "REJECTED"}, (found, liar["message"])
    assert "file was not there when n1 read it back, though n2 found the files it read " \
           "itself" in liar["message"]


def test_the_ceiling_is_the_declared_nics_line_rate_times_four_else_memory() -> None:
    spec = parse_spec(TWO.replace(
        "storage:", "interconnect:\n  busbw: '>= 10 GB/s'\n  payloads: [1 GiB]\n"
        "  inter_node: {kind: infiniband, nics_per_node: 2, rate_per_nic: 100 Gb/s}\n"
        "storage:"), "t.yaml")
    ceiling = node_ceiling(spec)
    assert ceiling.bytes_per_s == 4 * 2 * 100e9 / 8
    assert "interconnect.inter_node's 2 NIC(s) x 100 Gb/s" in ceiling.why
    assert ceiling.above(100e9, 1.0) == "" and ceiling.above(101e9, 1.0)
    assert node_ceiling(parse_spec(TWO, "t.yaml")).bytes_per_s == MOST_NODE_BYTES_PER_S


def test_a_node_claiming_longer_than_its_job_ran_is_bad_output(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the launcher's time is real, no rank can have taken longer than the
    controller saw its whole job run: n2 saying it wrote for a day fails as its bad
    output, its figure in no median (it lowered the median every node is held to), and n1
    is ACCEPTED. A simulated launcher's seconds are virtual: nothing to hold them to."""
    plain = jobs.run_job

    def real_time(launcher: Launcher, job: Any) -> Any:
        return dataclasses.replace(plain(launcher, job), simulated=False)

    monkeypatch.setattr(checkpoint_module, "run_job", real_time)
    lying(monkeypatch, "write", lambda d: d.update(seconds=86_400.0))
    honest_accepted_liar_rejected(*judged_two(pytester),
                                  "s the controller saw its whole job run")


def test_a_claimed_time_is_held_to_the_time_the_controller_saw() -> None:
    """held_to_observed fails what claims more than the observed time and its slack,
    keeps what does not, never touches what already failed, and holds nothing where the
    time is not real (None)."""
    found = (RankFigures("a", 0, 1, OBSERVED_SLACK_S + 10.5, 0.0, 0.0, 0.0, 0.0),
             RankFigures("b", 1, 1, OBSERVED_SLACK_S + 9.5, 0.0, 0.0, 0.0, 0.0),
             RankFigures("c", 2, 1, 99.0, 0.0, 0.0, 0.0, 0.0, error="gone"))
    held = held_to_observed(found, "write", 10.0, "bad: ")
    assert [r.error for r in held] == [
        f"bad: write: it says its part took {OBSERVED_SLACK_S + 10.5:.3g} s, longer than "
        "the 10 s the controller saw its whole job run, from launch to answer", "", "gone"]
    assert held_to_observed(found, "write", None, "bad: ") == found


def test_a_liars_bad_output_is_its_own_though_every_honest_node_failed(
        pytester: pytest.Pytester) -> None:
    """n1's mount is missing, so n3 finds none of its files and n1 none of n3's: every
    honest node's read failed, which two nodes cannot tell from the filesystem's fault.
    n2 claims 1,000x the bytes it wrote (the sim's `lies`): that claim is its own bad
    output whatever the filesystem did (before, the filesystem's fault excused it and the
    liar was NOT CHECKED)."""
    records = run(pytester, spec_text(
        "size_per_gpu: 1 GiB\nread: '>= 1 GB/s per GPU'", nodes="n[1-3]",
        faults="{node: n2, lies: storage_bytes}, {node: n1, storage_unmounted: true}"))
    liar = records["test_storage_checkpoint_keeps_up[n2-/shared]"]
    assert (liar["outcome"], liar["error_kind"]) == ("failed", "bad_output"), liar["message"]
    assert "claims 1073741824000 bytes written" in liar["message"]
    assert verdicts(pytester)["n2"] == "REJECTED"
    assert verdicts(pytester)["n3"] != "REJECTED"


def test_a_file_missing_for_a_reader_whose_own_file_was_found_is_its_writers(
        pytester: pytest.Pytester) -> None:
    """n2's mount is missing and it lies about what it read back (writer 999's file), so
    its reads prove nothing of its mount. n1 did not find n2's file; n1's own file was
    read back on n3, so n1 looks where the others do: the missing file is n2's (its
    write not proven), and n1 is not blamed (before, n1 was REJECTED for it)."""
    records = run(pytester, spec_text(
        "size_per_gpu: 1 GiB\nread: '>= 1 GB/s per GPU'", nodes="n[1-3]",
        faults="{node: n2, storage_unmounted: true}, {node: n2, lies: read_back}"))
    found = verdicts(pytester)
    reader = records["test_storage_checkpoint_keeps_up[n1-/shared]"]
    assert found["n2"] == "REJECTED" and found["n1"] != "REJECTED", reader["message"]
    assert "n1's own file was read back on another node" in \
        records["test_storage_checkpoint_keeps_up[n2-/shared]"]["message"]

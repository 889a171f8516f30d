"""A node's answer is its claim, as the other party's engineer would craft it (issue 48,
items 1 and 2): a number given as a string or a bool, a section that is no section, a
figure no GPU reaches whatever model it names, a fractional core, more memory allocated
than the GPU has, a storage rate just under the physical ceiling, a reader saying a file
is longer than its writer wrote. The lying node fails its own case as bad output naming
the field (never a pass, never a traceback), and the honest node beside it is judged on
its own figures - never through a median or a verdict the lie moved."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_cluster.measure import (
    dataloader_claims,
    fabric,
    latency,
    plausible,
    stragglers,
)
from pytest_cluster.sim import answers as sim_answers

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

SPEC = """\
cluster: {name: lies, nodes: "n[1-2]", launcher: sim}
host: {cpu_cores: ">= 1", cpu_threads: ">= 1", memory: ">= 1 GiB"}
gpus:
  count: 1
  usable_memory: ">= 50%"
  temperature: "<= 95 C"
  matmul: {bf16: ">= 100 TFLOPS"}
  h2d: ">= 1 GB/s"
  memory_bandwidth: ">= 1 GB/s"
  load_time: 1 s
sim: {gpu_model: H100-SXM-80GB, gpus_per_node: 1}
"""
GPU0 = "data['gpus'][0]"
#: case: (the probe whose answer n2 rewrites, the rewrite, the test, what its message says)
LIES: dict[str, tuple[str, str, str, str]] = {
    "cores 3.5": ("host", "data['cpu']['cores'] = 3.5", "test_cpu_cores",
                  "cpu.cores = 3.5"),
    "threads 7.5": ("host", "data['cpu']['threads'] = 7.5", "test_cpu_threads",
                    "cpu.threads = 7.5"),
    "cpu a list": ("host", "data['cpu'] = [64]", "test_cpu_cores", "cpu is a list"),
    "matmul true": ("gpu_perf", f"{GPU0}['matmul']['bf16']['tflops_median'] = True",
                    "test_gpu_matmul", "matmul.bf16.tflops_median = true"),
    "matmul '500'": ("gpu_perf", f"{GPU0}['matmul']['bf16']['tflops_median'] = '500'",
                     "test_gpu_matmul", "matmul.bf16.tflops_median = '500'"),
    "matmul of an unknown model": (
        "gpu_perf", f"{GPU0}['matmul']['bf16']['tflops_median'] = 1e9; "
        f"{GPU0}['name'] = 'NVIDIA X'", "test_gpu_matmul", "matmul = 1e+21"),
    "h2d '1e12'": ("gpu_perf", f"{GPU0}['h2d']['bytes_per_s'] = '1e12'", "test_gpu_h2d",
                   "h2d.bytes_per_s = '1e12'"),
    "h2d true": ("gpu_perf", f"{GPU0}['h2d']['bytes_per_s'] = True", "test_gpu_h2d",
                 "h2d.bytes_per_s = true"),
    "h2d 1e300": ("gpu_perf", f"{GPU0}['h2d']['bytes_per_s'] = 1e300", "test_gpu_h2d",
                  "h2d.bytes_per_s = 1e+300"),
    "temperature '85'": ("gpu_perf", f"{GPU0}['load']['temperature_max_c'] = '85'",
                         "test_gpu_temperature", "load.temperature_max_c = '85'"),
    "temperature true": ("gpu_perf", f"{GPU0}['load']['temperature_max_c'] = True",
                         "test_gpu_temperature", "load.temperature_max_c = true"),
    "allocated '1e10'": ("gpu_perf", f"{GPU0}['usable_memory']['allocated_bytes'] = '1e10'",
                         "test_gpu_memory_usable", "usable_memory.allocated_bytes = '1e10'"),
    "allocated 1 PiB": ("gpu_perf", f"{GPU0}['usable_memory']['allocated_bytes'] = 2**50",
                        "test_gpu_memory_usable", "usable_memory.allocated_bytes = 1.126e+15"),
}


def records(pytester: pytest.Pytester) -> dict[str, dict[str, Any]]:
    lines = (pytester.path / "reports" / "latest" / "results.jsonl").read_text().splitlines()
    return {r["nodeid"].split("::")[-1]: r for r in map(json.loads, lines)
            if r.get("type") == "result"}


def verdicts(pytester: pytest.Pytester) -> dict[str, str]:
    found = json.loads((pytester.path / "reports" / "latest" / "verdict.json").read_text())
    return {item["node"]: item["verdict"] for item in found["nodes"]}


@pytest.mark.parametrize("case", list(LIES))
def test_a_lie_in_a_node_s_answer_is_its_bad_output_naming_the_field(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    probe, rewrite, test, said = LIES[case]
    honest = sim_answers.PROBES[probe]

    def answer(sim: Any, links: Any, node: str, args: Any) -> Any:
        data = json.loads(json.dumps(honest(sim, links, node, args)))
        if node == "n2":
            exec(rewrite, {"data": data})  # noqa: S102 - the case's own text
        return data

    monkeypatch.setitem(sim_answers.PROBES, probe, answer)
    (pytester.path / "t.yaml").write_text(SPEC)
    pytester.runpytest("--cluster=t.yaml", "-p", "no:cacheprovider", "-k",
                       test.removeprefix("test_"))
    found = records(pytester)
    liar = [r for name, r in found.items() if name.startswith(f"{test}[n2")]
    honest_ = [r for name, r in found.items() if name.startswith(f"{test}[n1")]
    assert liar and honest_, sorted(found)
    for record in liar:
        assert (record["outcome"], record["error_kind"]) == ("failed", "bad_output"), record
        assert said in record["message"] and "measured_base" not in record, record["message"]
        assert "nan" not in record["message"] and "inf " not in record["message"]
    assert all(r["outcome"] == "passed" for r in honest_)


def test_every_gpu_figure_has_a_ceiling_whatever_model_the_node_names() -> None:
    """A model the reference table lacks has no published peak: the plausible range
    bounds its figures all the same."""
    for key in ("gpus.matmul.bf16", "gpus.matmul.fp8", "gpus.memory_bandwidth", "gpus.h2d",
                "gpus.d2h", "gpus.p2p"):
        assert plausible.fact_refused(key, 1e300), key
        assert plausible.fact_refused(key, 1e9) is None, key


STORAGE = """\
cluster: {name: t, nodes: 'n[1-2]', launcher: sim}
storage:
  - path: /shared
    shared: true
    checkpoint: {size_per_node: 1 GiB, write: '>= 1 GB/s', read: '>= 1 GB/s',
                 keeps_up: 80%}
sim: {gpu_model: H100-SXM-80GB, gpus_per_node: 8}
"""


def _lying_checkpoint(monkeypatch: pytest.MonkeyPatch, phase: str, rewrite: str,
                      liar: str = "n2") -> None:
    """The liar's ranks of the checkpoint's `phase` rewritten (`data`: a rank's answer)."""
    honest = sim_answers.JOBS["checkpoint"]

    def answer(sim: Any, links: Any, nodes: Sequence[str], part: Any) -> Any:
        parts: Any = honest(sim, links, nodes, part)
        for node, ranks in zip(nodes, parts, strict=True):
            for rank in ranks:
                data = rank["data"]
                if node == liar and data.get("phase") == phase and "error" not in data:
                    exec(rewrite, {"data": data})  # noqa: S102 - the case's own text
        return parts

    monkeypatch.setitem(sim_answers.JOBS, "checkpoint", answer)


@pytest.mark.parametrize("phase", ["write", "read"])
def test_a_storage_rate_just_under_the_ceiling_never_sets_the_honest_node_s_bar(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, phase: str) -> None:
    """n2 claims 50 x its real speed, under every ceiling: with two nodes the mean of the
    two put n1 at 4% of the 'median' and REJECTED it (n2 ACCEPTED); the median is now
    a node's own figure, the lower middle one, so a liar sets no one's bar."""
    _lying_checkpoint(monkeypatch, phase, "data['seconds'] /= 50")
    (pytester.path / "t.yaml").write_text(STORAGE)
    pytester.runpytest("--cluster=t.yaml", "-p", "no:cacheprovider", "-k", "checkpoint")
    found = records(pytester)
    assert found["test_storage_checkpoint_keeps_up[n1-/shared]"]["outcome"] == "passed"
    assert verdicts(pytester)["n1"] == "ACCEPTED"


def test_a_reader_saying_the_file_is_longer_than_written_convicts_no_writer(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """n2 reads n1's file back, every block as written and the digest right, and says the
    file is 4 KiB longer: n1 was REJECTED as a writer whose file was not as claimed (and
    n2 left NOT CHECKED). The digest proves what n1 wrote; the extra length is n2's word
    alone, and disproves no one."""
    _lying_checkpoint(monkeypatch, "read", "data['file_bytes'] += 4096")
    (pytester.path / "t.yaml").write_text(STORAGE)
    pytester.runpytest("--cluster=t.yaml", "-p", "no:cacheprovider", "-k", "checkpoint")
    assert verdicts(pytester)["n1"] == "ACCEPTED"


@pytest.mark.parametrize(("link", "kept"), [
    ({"exchange_s": {"x": 1.0, "1": 0.5}}, {1: 0.5}), ({"exchange_s": [1.0]}, {}),
    (["exchange_s"], {}), ({"exchange_s": {"9" * 5000: 1.0}}, {})])
def test_a_training_rank_s_garbled_exchange_times_are_left_out_not_a_traceback(
        link: object, kept: dict[int, float]) -> None:
    times = stragglers.RankTimes.of("n2", 1, {"forward_s": [0.1], "link": link})
    assert times.exchange_s == kept


def test_a_rank_claiming_another_s_rank_puts_its_pairs_on_no_other_node(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """sim-gpu-03 (rank 2) says it is rank 0 and reports a pair with rank 1 at 0.1 us:
    the pair and its bad output were sim-gpu-01's (its latency failed as bad output, an
    honest node convicted). Each rank's figures are now the rank the job ran it as: the
    pair is no pair of rank 2's (the lower rank reports a pair), its bad output."""
    honest = sim_answers.JOBS["pingpong"]

    def answer(sim: Any, links: Any, nodes: Sequence[str], part: Any) -> Any:
        parts: Any = honest(sim, links, nodes, part)
        pair = json.loads(json.dumps(parts[0][0]["data"]["pairs"][0]))
        for figures in pair["sizes"].values():
            figures["typical_rtt_s"] = 1e-7
        parts[2][0]["data"].update(rank=0, pairs=[{**pair, "peer": 1}])
        return parts

    monkeypatch.setitem(sim_answers.JOBS, "pingpong", answer)
    (pytester.path / "t.yaml").write_text(
        (EXAMPLES / "sim-h100-storage-faulty.yaml").read_text())
    pytester.runpytest("--cluster=t.yaml", "--cluster-node=sim-gpu-[01-03]", "-p",
                       "no:cacheprovider", "-k", "test_latency")
    found = records(pytester)
    liar = found["test_latency[sim-gpu-03]"]
    assert (liar["outcome"], liar["error_kind"]) == ("failed", "bad_output"), liar
    assert "no other rank of this job" in liar["message"]
    assert found["test_latency[sim-gpu-01]"]["outcome"] == "passed"
    assert found["test_latency[sim-gpu-02]"]["outcome"] == "passed"


@pytest.mark.parametrize("rtt", [-1e-6, True, "2e-5", None, [1e-5]])
def test_a_round_trip_that_is_no_time_is_its_reporter_s_bad_output_not_the_job_s(
        rtt: object) -> None:
    """A negative round trip raised, and the whole ping-pong job failed as bad output of
    no one (every node NOT CHECKED); a string or a bool was read as a time. Now each is
    the reporting node's bad output, its pair left out, the others' kept."""
    refused: dict[str, str] = {}
    data = [{"rank": 0, "pairs": [{"peer": 1, "sizes": {"8": {"typical_rtt_s": rtt}}}]},
            {"rank": 2, "pairs": [{"peer": 3, "sizes": {"8": {"typical_rtt_s": 2e-5}}}]}]
    assert latency.links_of(["n1", "n2", "n3", "n4"], data, refused) == [
        ("n3", "n4", 8, 1e-5)]
    assert list(refused) == ["n1"] and "not a time" in refused["n1"]


@pytest.mark.parametrize("value", [2**64, 2**64 + 1])
def test_a_counter_beyond_64_bits_is_refused_as_the_integer_given(value: int) -> None:
    """2**64 + 1 is 2.0**64 as a float, which the range held (its high end was 2.0**64):
    a NIC counter no 64-bit register holds passed. It is compared as given now, and
    said as given."""
    port = {"name": "mlx5_0/1", "kind": "rdma", "counters": {"link_downed": value}}
    with pytest.raises(ValueError, match=f"counters.link_downed = {value}, "):
        fabric.ports_of({"ports": [port]})
    assert fabric.ports_of({"ports": [{**port, "counters": {"link_downed": 2**64 - 1}}]})


@pytest.mark.parametrize("capacity", [5e-324, 0.5, "1e15", -1])
def test_a_filesystem_size_no_filesystem_has_sets_no_reference(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capacity: object) -> None:
    """The write job's rank 0 reports the filesystem's size, for the references per TiB:
    5e-324 bytes made a reference of 0 GB/s and the write's case a ZeroDivisionError
    (tool_fault, every node's); now a size that is no whole number of bytes is left out
    (plausible.FACTS['storage.capacity']) and the case judged on the figures."""
    _lying_checkpoint(monkeypatch, "write", f"data['capacity_bytes'] = {capacity!r}",
                      liar="n1")
    (pytester.path / "t.yaml").write_text(STORAGE)
    pytester.runpytest("--cluster=t.yaml", "-p", "no:cacheprovider", "-k", "checkpoint")
    write = records(pytester)["test_storage_checkpoint_write[/shared]"]
    assert write["outcome"] == "passed", write.get("message")
    assert "FSx" not in str(write.get("reference"))


@pytest.mark.parametrize(("cpu_s", "bad"), [(1e300, True), (5.0, True), (0.9, False)])
def test_a_worker_s_cpu_time_beyond_its_wall_time_is_its_bad_output(
        cpu_s: float, bad: bool) -> None:
    """A data loader worker (one thread) claiming 1e300 CPU seconds in its 1 s of reads
    was believed: 'CPU-bound, not the filesystem', with a 300-digit percentage in the
    message. More CPU time than its wall time (a margin for the clocks) is its bad
    output now."""
    asked = dataloader_claims.Asked(size=2**20, read_size=2**16, duration_s=1.0, files=10)
    data: Any = {"ops": 100, "bytes": 100 * 2**16, "seconds": 1.0, "cpu_s": cpu_s,
                 "late_s": 0.0}
    worker = dataloader_claims.worker_figures("n2", 1, data, "", "read", asked)
    assert worker.error.startswith(dataloader_claims.BAD) is bad, worker.error
    assert len(worker.error) < 200

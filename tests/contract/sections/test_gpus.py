"""The GPU acceptance suite on simulated clusters (the real GPU probe answered by the
simulated NVML): every health rule both ways, the examples, and simulated marking."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from pytest_cluster.contract.clauses import declared
from pytest_cluster.contract.extensions import added_clauses
from pytest_cluster.evidence.verdict.faults import declaration_of
from tests.conftest import on, on_no_node, planned
from tests.test_plugin import jsonl, junit_props

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"

SMALL = """\
cluster: {{name: small, nodes: "n[1-2]", launcher: sim}}
gpus:
  count: 2
  model: H100-SXM-80GB
  memory: ">= 80 GB"
  usable_memory: ">= 95%"
  temperature: "<= 85 C"
  ecc_corrected: "<= 1000"
  power_limit: ">= 700 W"
  matmul: {{bf16: ">= 700 TFLOPS"}}
  memory_bandwidth: ">= 2.8 TB/s"
  h2d: ">= 40 GB/s"
  d2h: ">= 40 GB/s"
  p2p: ">= 300 GB/s"
  load_time: 2 s
sim:
  gpu_model: H100-SXM-80GB
  gpus_per_node: 2
  faults: [{faults}]
"""


def small(pytester: pytest.Pytester) -> tuple[str, ...]:
    """SMALL's cases (healthy) as its run collects them: each test derives what it counts
    from these (a GPU clause more changes them, never the tests)."""
    return planned(pytester, SMALL.format(faults=""))


def run(pytester: pytest.Pytester, spec: str, *args: str) -> pytest.RunResult:
    path = pytester.path / "trial.yaml"
    path.write_text(spec, encoding="utf-8")
    return pytester.runpytest(f"--cluster={path}", "-p", "no:cacheprovider", "-p",
                              "no:randomly", *args)


SOFTWARE = declared("host.same_software").members


def failed(pytester: pytest.Pytester) -> dict[str, str]:
    """nodeid name -> failure message, from results.jsonl."""
    return {r["nodeid"].split("::")[-1]: r["message"] for r in jsonl(pytester)
            if r.get("type") == "result" and r["outcome"] != "passed"}


def test_healthy_small_cluster_passes_everything(pytester: pytest.Pytester) -> None:
    cases = small(pytester)
    result = run(pytester, SMALL.format(faults=""))
    # each of its cases passed (per GPU, per node, the same driver and software on every
    # node); every other collected case is of a clause not in contract: deselected, none
    # failed or skipped
    passed = len(cases)
    assert {"test_gpu_matmul[n2-gpu1-bf16]", "test_gpu_p2p[n1-gpu0]", "test_gpu_count[n1]",
            "test_gpu_driver_same_on_all_nodes"} <= set(cases)
    collected = re.search(r"collected (\d+) items", result.stdout.str())
    assert collected is not None
    outcomes = {k: v for k, v in result.parseoutcomes().items() if not k.startswith("warn")}
    assert outcomes == {"passed": passed, "deselected": int(collected[1]) - passed}
    assert failed(pytester) == {}


RULES = [
    ("{node: n2, gpu: 1, row_remap_pending: true}", "test_gpu_row_remap[n2-gpu1]",
     "n2 gpu1 row_remap: a row remap is pending (the GPU needs a reset)"),
    ("{node: n2, gpu: 1, row_remap_failure: true}", "test_gpu_row_remap[n2-gpu1]",
     "n2 gpu1 row_remap: a row remap failed (the GPU needs replacing)"),
    ("{node: n1, gpu: 0, ecc_uncorrected: 2}", "test_gpu_ecc[n1-gpu0]",
     "n1 gpu0 ecc_uncorrected: measured 2 > allowed 0"),
    ("{node: n1, gpu: 1, nvlinks_down: 2}", "test_gpu_nvlink[n1-gpu1]",
     "n1 gpu1 nvlink: 2 of 18 NVLink links down (links 16, 17)"),
    ("{node: n1, gpu: 1, throttle: hw_slowdown}", "test_gpu_throttle[n1-gpu1]",
     "n1 gpu1 throttle: throttled under load: hw_slowdown (clocks event reasons 0x8"),
    ("{node: n1, gpu: 1, throttle: sw_thermal}", "test_gpu_throttle[n1-gpu1]",
     "throttled under load: sw_thermal (clocks event reasons 0x20"),
    ("{node: n1, gpu: 1, throttle: hw_thermal}", "test_gpu_throttle[n1-gpu1]",
     "throttled under load: hw_thermal (clocks event reasons 0x40"),
    ("{node: n1, gpu: 1, throttle: power_brake}", "test_gpu_throttle[n1-gpu1]",
     "throttled under load: power_brake (clocks event reasons 0x80"),
    ("{node: n2, gpu: 0, xid: 79}", "test_gpu_xid[n2-gpu0]",
     "n2 gpu0 xid: critical XID errors: XID 79 (NVML events"),
    ("{node: n2, gpu: 0, temperature: 92 C}", "test_gpu_temperature[n2-gpu0]",
     "n2 gpu0 temperature: measured 92 C > allowed 85 C"),
]


@pytest.mark.parametrize(("fault", "test", "message"), RULES,
                         ids=[f"{r[1]}:{r[0]}" for r in RULES])
def test_each_health_rule_fails_its_gpu_alone(pytester: pytest.Pytester, fault: str,
                                              test: str, message: str) -> None:
    run(pytester, SMALL.format(faults=fault))
    found = failed(pytester)
    assert list(found) == [test]
    assert message in found[test]
    assert found[test].startswith("Failed: [SIMULATED] ")


MEASUREMENTS = [
    ("{node: n1, gpu: 1, memory_held: 5 GiB}", ["test_gpu_memory_usable[n1-gpu1]"],
     r"n1 gpu1 usable_memory: measured 92\.\d+% < required 95% .*; held by other "
     r"processes: pid 4242 \(5\.0 GiB\)"),
    ("{node: n1, gpu: 0, pcie_gen: 4, pcie_width: 8}",
     ["test_gpu_pcie[n1-gpu0]", "test_gpu_h2d[n1-gpu0]", "test_gpu_d2h[n1-gpu0]"],
     r"PCIe link at Gen4 x8 under load, below its maximum Gen5 x16"),
    ("{node: n2, gpu: 1, matmul_factor: 0.8}", ["test_gpu_matmul[n2-gpu1-bf16]"],
     r"n2 gpu1 bf16: measured 6\d\d(\.\d+)? TFLOPS < required 700 TFLOPS"),
    # With 2 GPUs a slow GPU-to-GPU copy cannot be pinned on one of them: both fail p2p
    # (with 8, the median over a GPU's 14 copies names the slow one alone).
    ("{node: n2, gpu: 0, bandwidth_factor: 0.5}",
     ["test_gpu_memory_bandwidth[n2-gpu0]", "test_gpu_p2p[n2-gpu0]", "test_gpu_p2p[n2-gpu1]"],
     r"n2 gpu0 memory_bandwidth: measured 1\.\d+ TB/s < required 2\.8 TB/s"),
    ("{node: n1, gpu: 1, model: H100-PCIe-80GB}",
     ["test_gpus_same_model[n1]", "test_gpu_model[n1-gpu1]", "test_gpu_nvlink[n1-gpu1]",
      "test_gpu_power_limit[n1-gpu1]", "test_gpu_matmul[n1-gpu1-bf16]",
      "test_gpu_memory_bandwidth[n1-gpu1]", "test_gpu_p2p[n1-gpu1]", "test_gpu_p2p[n1-gpu0]"],
     r"n1 uniform: GPUs of different models: 1 x NVIDIA H100 80GB HBM3 \(gpu 0\); 1 x NVIDIA H100 "
     r"PCIe \(gpu 1\)"),
]


@pytest.mark.parametrize(("fault", "tests", "message"), MEASUREMENTS,
                         ids=[m[0] for m in MEASUREMENTS])
def test_measurement_faults_fail_exactly_their_cases(pytester: pytest.Pytester, fault: str,
                                                     tests: list[str], message: str) -> None:
    run(pytester, SMALL.format(faults=fault))
    found = failed(pytester)
    assert sorted(found) == sorted(tests)
    assert re.search(message, found[tests[0]]), found[tests[0]]


def test_pcie_card_among_sxm_names_both(pytester: pytest.Pytester) -> None:
    run(pytester, SMALL.format(faults="{node: n1, gpu: 1, model: H100-PCIe-80GB}"))
    found = failed(pytester)
    assert found["test_gpu_model[n1-gpu1]"] == (
        "Failed: [SIMULATED] n1 gpu1 model: is NVIDIA H100 PCIe (H100-PCIe-80GB, PCIe), the "
        "contract says H100-SXM-80GB (SXM5)")
    assert "NVML lists 0 NVLink links, the contract's H100-SXM-80GB has 18" in found[
        "test_gpu_nvlink[n1-gpu1]"]


@pytest.mark.parametrize("fault", ["{node: n1, gpu: 1, model: H100-PCIe-80GB}",
                                   "{node: n1, gpu: 1, nvlinks_down: 2}"])
def test_nvlinks_up_are_counted_out_of_the_links_the_message_names(
        pytester: pytest.Pytester, fault: str) -> None:
    """The measured value (the clauses table's worst) counts the links up out of the same
    total as the failure's message: the model's 18, even where NVML lists none."""
    run(pytester, SMALL.format(faults=fault))
    (record,) = [r for r in jsonl(pytester) if r.get("type") == "result"
                 and r["nodeid"].endswith("test_gpu_nvlink[n1-gpu1]")]
    said = re.search(r"(\d+) of (\d+) NVLink links down|has (\d+)$", record["message"])
    assert said is not None, record["message"]
    total = int(said.group(2) or said.group(3))
    down = int(said.group(1) or total)
    assert record["measured"].startswith(f"{total - down} of {total} links up")
    html = (pytester.path / "reports" / "latest" / "report.html").read_text()
    assert f"<td>{record['measured']} (n1 gpu1)</td>" in html


def test_a_missing_gpu_fails_its_count_and_its_slot(pytester: pytest.Pytester) -> None:
    gpu1 = on(small(pytester), "n2-gpu1")
    run(pytester, SMALL.format(faults="{node: n2, gpus: 1}"))
    found = failed(pytester)
    assert found.pop("test_gpu_count[n2]") == "Failed: [SIMULATED] n2 count: measured 1 != " \
                                              "required 2"
    # gpu0, alone on its node now, has no partner for GPU-to-GPU copies
    assert sorted(found) == sorted([*gpu1, "test_gpu_p2p[n2-gpu0]"])
    assert "test_gpu_matmul[n2-gpu1-bf16]" in gpu1
    assert found["test_gpu_p2p[n2-gpu0]"] == (
        "Failed: [SIMULATED] n2 gpu0 p2p: cannot measure: no GPU-to-GPU copies with gpu0: "
        "torch sees 1 GPU(s) on the node")
    assert found["test_gpu_memory[n2-gpu1]"] == (
        "Failed: [SIMULATED] n2 gpu1 memory: the node has no GPU 1: NVML lists 1 GPU(s)")


def test_a_dead_node_fails_only_its_own_tests(pytester: pytest.Pytester) -> None:
    cases = small(pytester)
    run(pytester, SMALL.format(faults="{node: n1, down: true}"))
    found = failed(pytester)
    # the cluster checks ("the same on every node") are not established without n1
    same = {name for name in found if "same_on_all_nodes" in name}
    assert same == {"test_gpu_driver_same_on_all_nodes",
                    *(f"test_software_same_on_all_nodes[{p}]" for p in SOFTWARE)}
    assert {name.split("[")[1].split("-")[0].rstrip("]") for name in found
            if name not in same} == {"n1"}
    assert len(found) == len(on(cases, "n1")) + len(on_no_node(cases, ("n1", "n2")))
    assert found["test_gpu_driver_same_on_all_nodes"].startswith(
        "Failed: [SIMULATED] driver: driver ")
    assert "; 1 of 2 node(s) did not answer (n1), so the same driver on every node is not " \
        "established (first: n1: gpu probe unreachable: simulated: " in found[
            "test_gpu_driver_same_on_all_nodes"]
    assert "n1: gpu probe unreachable: simulated: the node does not answer" in found[
        "test_gpu_count[n1]"]


def test_rules_can_be_left_out(pytester: pytest.Pytester) -> None:
    spec = SMALL.format(faults="{node: n1, gpu: 1, throttle: hw_slowdown}").replace(
        "  load_time: 2 s\n", "  load_time: 2 s\n  throttle: false\n  pcie: false\n")
    result = run(pytester, spec)
    assert failed(pytester) == {}
    result.stdout.fnmatch_lines(["*not in contract, not tested: *gpus.pcie (off: pcie: "
                                 "false), gpus.sdc (level stress: run it with -m stress), *, "
                                 "gpus.throttle (off: throttle: false), *"])


def test_evidence_names_the_gpu_and_says_simulated(pytester: pytest.Pytester) -> None:
    run(pytester, SMALL.format(faults="{node: n1, gpu: 1, memory_held: 5 GiB}"))
    props = junit_props(pytester)
    case = props["test_gpu_memory_usable[n1-gpu1]"]
    assert case["gpu"] == "1"
    assert re.fullmatch(r"GPU-[0-9a-f-]{36}", case["gpu_uuid"])
    assert re.fullmatch(r"1654\d{9}", case["gpu_serial"])
    assert case["simulated"] == "True"
    assert case["unit"] == "%"
    assert case["spec_key"] == "gpus.usable_memory"
    assert case["spec_line"] == "6"
    for name, case in props.items():
        if "gpu" in name:
            assert case["simulated"] == "True", name
    records = jsonl(pytester)
    assert records[0]["simulated"] is True
    assert all(r["simulated"] is True for r in records[1:])
    html = (pytester.path / "reports" / "latest" / "report.html").read_text()
    assert "SIMULATED" in html
    assert "every number in this report is simulated" in html
    junit = (pytester.path / "reports" / "latest" / "junit.xml").read_text()
    assert '<property name="simulated" value="true"' in junit


@pytest.mark.slow
def test_the_healthy_example_passes(pytester: pytest.Pytester) -> None:
    result = run(pytester, (EXAMPLES / "sim-h100.yaml").read_text())
    assert failed(pytester) == {}
    outcomes = result.parseoutcomes()
    assert outcomes["passed"] > 500
    result.stdout.fnmatch_lines(["*SIMULATED*"])


@pytest.mark.slow
def test_the_faulty_example_fails_exactly_its_faults(pytester: pytest.Pytester) -> None:
    spec = (EXAMPLES / "sim-h100-faulty.yaml").read_text()
    missing = set(on(planned(pytester, spec), "sim-gpu-02-gpu7"))  # the GPU the node lacks
    run(pytester, spec)
    expected = missing | {
        "test_gpu_count[sim-gpu-02]",
        "test_gpu_memory_usable[sim-gpu-01-gpu3]",
        "test_gpu_pcie[sim-gpu-01-gpu5]", "test_gpu_h2d[sim-gpu-01-gpu5]",
        "test_gpu_d2h[sim-gpu-01-gpu5]",
        "test_gpu_row_remap[sim-gpu-03-gpu1]",
        "test_gpus_same_model[sim-gpu-03]", "test_gpu_model[sim-gpu-03-gpu6]",
        "test_gpu_nvlink[sim-gpu-03-gpu6]", "test_gpu_power_limit[sim-gpu-03-gpu6]",
        "test_gpu_matmul[sim-gpu-03-gpu6-bf16]", "test_gpu_matmul[sim-gpu-03-gpu6-fp16]",
        "test_gpu_matmul[sim-gpu-03-gpu6-tf32]", "test_gpu_memory_bandwidth[sim-gpu-03-gpu6]",
        "test_gpu_p2p[sim-gpu-03-gpu6]",
        "test_gpu_throttle[sim-gpu-04-gpu2]",
        "test_gpu_matmul[sim-gpu-04-gpu7-bf16]", "test_gpu_matmul[sim-gpu-04-gpu7-fp16]",
        "test_gpu_matmul[sim-gpu-04-gpu7-tf32]",
    }
    assert set(failed(pytester)) == expected


@pytest.mark.slow
def test_the_simulated_trial_fails_exactly_its_two_faults(pytester: pytest.Pytester) -> None:
    """examples/trial-sim.yaml, README's first run: examples/trial.yaml's contract on a
    simulated cluster (no storage), a slow GPU and a NIC down. The jobs across nodes that
    have either node in them are held back (the slow GPU's links are on every ring through
    its node; the node with a NIC down has 7 of 8), and the slow-node search names both."""
    result = run(pytester, (EXAMPLES / "trial-sim.yaml").read_text())
    assert set(failed(pytester)) == {
        "test_fabric_ports[gpu-002]", "test_gpu_memory_bandwidth[gpu-003-gpu5]",
        "test_gpu_p2p[gpu-003-gpu5]",
        *(f"test_collective_intra_node[gpu-003-{c}-{p}]"
          for c in ("all_reduce", "all_gather") for p in ("4GiB", "16GiB")),
        *(f"test_collective_inter_node[{c}-{p}-{n}nodes]"
          for c in ("all_reduce", "all_gather") for p, n in (("4GiB", 2), ("4GiB", 4),
                                                             ("16GiB", 4))),
        "test_node_network[gpu-002]", "test_node_network[gpu-003]"}
    # a job's number names no node: each says which cases do
    assert all(message.endswith("; the node that holds it back is named by "
                                "busbw[node_network] (pairs of nodes)")
               for case, message in failed(pytester).items() if "inter_node" in case)
    ports = declaration_of("fabric.ports")
    assert ports is not None and ports.fault is not None
    result.stdout.fnmatch_lines(["nodes: 2 ACCEPTED, 2 REJECTED, 0 UNREACHABLE, 0 NOT CHECKED",
                                 "  REJECTED gpu-002: 2 clause(s) failed: fabric.ports, "
                                 "interconnect.busbw[node_network]; PC-NET-PORTS "
                                 f"(provider-network): {ports.fault.action}"])
    # the README shows this run's lines as they are printed ('...': the rest of a line)
    readme = (EXAMPLES.parent / "README.md").read_text(encoding="utf-8")
    block = readme.split(".venv/bin/pytest --cluster=examples/trial-sim.yaml\n", 1)[1]
    shown = [line[2:] for line in block.split("```", 1)[0].splitlines()]
    assert len(shown) >= 5
    # ...of our clauses: an installed extension's (their cases) add to its figure
    added = {d.id for d in added_clauses()}
    theirs = sum(1 for r in jsonl(pytester) if r.get("type") == "result"
                 and r.get("clause") in added)
    shown = [re.sub(r"\b(\d+) of (\d+) contract check",
                    lambda m: f"{int(m[1]) + theirs} of {int(m[2]) + theirs} contract check",
                    line) for line in shown]
    result.stdout.fnmatch_lines([line.replace("[", "[[]").replace("...", "*")
                                 for line in shown], consecutive=True)


@pytest.mark.slow
def test_without_a_gpu_the_real_probes_say_why(pytester: pytest.Pytester) -> None:
    """On this machine (no GPU) the real probes run through the local launcher and every
    GPU case fails with their reason, not a number."""
    spec = (f"cluster: {{name: nogpu, nodes: n1, python: {sys.executable}}}\n"
            "gpus: {count: 1, matmul: {bf16: '>= 1 TFLOPS'}, load_time: 1 s}\n")
    run(pytester, spec)
    found = failed(pytester)
    assert "test_gpu_count[n1]" in found
    assert re.search(r"n1 count: cannot measure: (NVML not available|nvidia-ml-py is not "
                     r"installed)", found["test_gpu_count[n1]"])
    assert "SIMULATED" not in " ".join(found.values())
    for record in [r for r in jsonl(pytester) if r["type"] == "result"]:
        assert record["outcome"] == "failed"
        assert "measured" not in record
        assert record["simulated"] is False if "simulated" in record else True

"""The spec's `sim:` section (pytest_cluster/contract/sections/sim.py): every fault kind of its
table
(FAULT_KEYS) is read into the SimFault it says, a wrong value of any kind is one error at
its key, and a fault says where it is (a node's on no GPU, a GPU's on its GPU)."""

from __future__ import annotations

import dataclasses

import pytest

from pytest_cluster.contract import parse_spec
from pytest_cluster.contract.sections.sim import (
    DCGM_CONFIGS,
    DCGM_TESTS,
    FAULT_KEYS,
    LIES,
    NODE_FAULTS,
    SIM_TRANSPORTS,
    STORAGE_ERRORS,
    THROTTLES,
)
from pytest_cluster.contract.sections.sim_records import SimFault, SimSpec
from tests.contract.test_loader_slips import SIM_BASE as NO_DCGM
from tests.contract.test_loader_slips import error_of

#: The specs' head: two nodes, eight GPUs and DCGM's diagnostic (which dcgm_fail and
#: dcgm_config play in).
SIM_BASE = NO_DCGM.replace("gpus: {count: 8}", "gpus: {count: 8, dcgm_diag: r1}")
assert SIM_BASE != NO_DCGM

#: A value of each fault kind that changes the fault (a hand table, checked against
#: FAULT_KEYS below: a kind added to the parser and not here fails the test).
EXAMPLES = {
    "node": "n2", "gpu": "1", "gpus": "7", "down": "true", "model": "H100-SXM-80GB",
    "memory_held": "5 GiB", "pcie_gen": "4", "pcie_width": "8", "row_remap_pending": "true",
    "row_remap_failure": "true", "ecc_uncorrected": "4", "nvlinks_down": "2",
    "throttle": THROTTLES[0], "xid": "79", "temperature": "'95 C'", "matmul_factor": "0.8",
    "bandwidth_factor": "0.5", "link_factor": "0.5", "replaced": "true", "from_round": "2",
    "until_round": "3", "sdc": "true", "nic": "1", "nic_down": "true",
    "nic_rate": "'100 Gb/s'", "nic_firmware": "'28.39.1002'", "nic_link_downed": "3",
    "nic_symbol_errors": "9", "nic_pcie_gen": "4", "nic_pcie_width": "8",
    "nic_virtual": "true",
    "transport": SIM_TRANSPORTS[0], "gdr": "false",
    "latency_factor": "3", "storage_factor": "0.5", "storage_corrupt": "true",
    "storage_error": next(iter(STORAGE_ERRORS)), "storage_unmounted": "true",
    "lies": next(iter(LIES)), "nccl_dead": "true",
    "vbios": "'96.00.89.00.01'", "dcgm_fail": DCGM_TESTS[2],
    "dcgm_config": DCGM_CONFIGS[0],
}


def where(key: str) -> str:
    """What a fault of kind `key` is given with: its node; its GPU, unless a node fault;
    its NIC, for a NIC's fault."""
    on_gpu = "" if key in NODE_FAULTS else ", gpu: 0"
    on_nic = ", nic: 0" if key.startswith("nic") else ""
    return f"node: n1{on_gpu}{on_nic}"


def faults_of(fault: str) -> tuple[SimFault, ...]:
    """The faults the spec of one fault, `fault` (a flow map's inside), is read into."""
    spec = parse_spec(SIM_BASE + f"sim:\n  faults:\n    - {{{fault}}}\n", "t.yaml")
    assert spec.sim is not None
    return spec.sim.faults


def test_every_fault_kind_has_an_example() -> None:
    assert sorted(EXAMPLES) == sorted(FAULT_KEYS)


@pytest.mark.parametrize("key", FAULT_KEYS)
def test_every_fault_kind_is_read_into_the_fault_it_says(key: str) -> None:
    """Given alone (with its node, GPU or NIC), each kind of FAULT_KEYS parses with no
    error into a fault other than the one without it."""
    base = where(key)
    parts = dict(part.split(": ", 1) for part in base.split(", "))
    parts[key] = EXAMPLES[key]  # `node` and `gpu` given another value than the base's
    given = ", ".join(f"{name}: {value}" for name, value in parts.items())
    with_it, = faults_of(given)
    without, = faults_of(base)
    assert with_it != without


@pytest.mark.parametrize("key", [key for key in FAULT_KEYS if key != "node"])
def test_a_list_for_any_fault_kind_is_one_error_at_its_key(key: str) -> None:
    message = error_of(SIM_BASE + f"sim:\n  faults:\n    - {{{where(key)}, {key}: [1]}}\n"
                       if key not in ("gpu", "nic") else
                       SIM_BASE + f"sim:\n  faults:\n    - {{node: n1, {key}: [1]}}\n")
    assert message.startswith(f"t.yaml:5: sim.faults[0].{key}: expected ")
    assert message.endswith(", got a list")
    assert "\n" not in message  # one error


@pytest.mark.parametrize(("key", "choices"), [("throttle", THROTTLES),
                                              ("storage_error", tuple(STORAGE_ERRORS)),
                                              ("lies", tuple(LIES)),
                                              ("dcgm_fail", DCGM_TESTS),
                                              ("dcgm_config", DCGM_CONFIGS),
                                              ("transport", SIM_TRANSPORTS)])
def test_every_choice_of_a_named_fault_is_read_as_written(key: str,
                                                          choices: tuple[str, ...]) -> None:
    for choice in choices:
        fault, = faults_of(f"{where(key)}, {key}: {choice}")
        assert getattr(fault, key) == choice


@pytest.mark.parametrize("key", sorted(NODE_FAULTS))
def test_every_node_fault_given_with_a_gpu_is_refused(key: str) -> None:
    text = SIM_BASE + f"sim:\n  faults:\n    - {{node: n1, gpu: 2, {key}: {EXAMPLES[key]}}}\n"
    assert error_of(text) == (f"t.yaml:5: sim.faults[0].{key}: {key} is a node fault "
                              f"({NODE_FAULTS[key]}), not a GPU's: give it without gpu")


def test_a_fault_read_keeps_its_line_and_its_defaults() -> None:
    fault, = faults_of("node: n1, gpu: 3, xid: 79")
    assert fault == SimFault(node="n1", gpu=3, line=5, xid=79)
    assert dataclasses.replace(fault, xid=None) == SimFault(node="n1", gpu=3, line=5)


@pytest.mark.parametrize(("fault", "path", "message"), [
    ("{gpu: 1, xid: 79}", "node", "missing: which node the fault is on"),
    ("{node: n1, nic_down: true}", "nic", "missing: a NIC fault needs the NIC's index "
     "(nic: 3, for mlx5_3)"),
    ("{node: n1, xid: 79}", "gpu", "missing: a GPU fault needs the GPU index (gpu: 3)"),
    ("{node: n1, nic: 64, nic_down: true}", "nic", "expected a whole number from 0 to 63, "
     "got 64"),
    ("{node: n1, nic: 0, nic_rate: 0 Gb/s}", "nic_rate", "expected a rate above 0 like "
     "'200 Gb/s', got '0 Gb/s'"),
    ("{node: n1, latency_factor: 0.5}", "latency_factor", "expected how many times farther "
     "the node is, from 1 to 1000 like 3, got '0.5'"),
    ("{node: n1, gpu: 0, matmul_factor: 0}", "matmul_factor", "expected a factor above 0 "
     "like 0.8, got 0"),
    ("{node: n1, gpus: -1}", "gpus", "expected a whole number >= 0, got -1"),
    ("{node: n1, nic: 0, nic_firmware: ' '}", "nic_firmware", "expected a firmware version "
     "like '28.39.1002', got ' '"),
    ("{node: n1, nic_pcie_width: 8}", "nic", "missing: a NIC fault needs the NIC's index "
     "(nic: 3, for mlx5_3)"),
    ("{node: n1, nic: 0, nic_pcie_gen: 6}", "nic_pcie_gen", "expected a whole number from 1 "
     "to 5, got 6"),
    ("{node: n1, nic: 0, nic_pcie_width: 3}", "nic_pcie_width", "expected the lanes a NIC's "
     "PCIe link trained to: 1, 2, 4, 8, 16; got '3'"),
    ("{node: n1, nic: 0, nic_pcie_width: '8'}", "nic_pcie_width", "expected the lanes a "
     "NIC's PCIe link trained to: 1, 2, 4, 8, 16; got '8'"),
])
def test_a_fault_missing_where_it_is_or_out_of_range_is_one_exact_error(
        fault: str, path: str, message: str) -> None:
    text = SIM_BASE + f"sim:\n  faults:\n    - {fault}\n"
    assert error_of(text) == f"t.yaml:5: sim.faults[0].{path}: {message}"


def _nics(count: int) -> str:
    return (f"interconnect:\n  inter_node: {{kind: infiniband, nics_per_node: {count}, "
            "rate_per_nic: 400 Gb/s}\n  payloads: [1 GiB]\n  busbw: '>= 300 GB/s'\n")


@pytest.mark.parametrize(("head", "fault", "path", "message"), [
    (SIM_BASE, "{node: n2, nic: 9, nic_pcie_width: 8}", "nic", "expected a NIC index from 0 "
     "to 7 (the simulated nodes have 8 NICs: interconnect.inter_node.nics_per_node, 8 "
     "without it), got 9: the fault would never play"),
    (SIM_BASE + _nics(4), "{node: n2, nic: 4, nic_down: true}", "nic",
     "expected a NIC index from 0 to 3 (the simulated nodes have 4 NICs: interconnect."
     "inter_node.nics_per_node, 8 without it), got 4: the fault would never play"),
    (NO_DCGM, "{node: n2, gpu: 4, dcgm_fail: memory}", "dcgm_fail", "never plays: the spec "
     "runs no DCGM diagnostic (add gpus.dcgm_diag: r1, r2, r3 or r4)"),
    (NO_DCGM, "{node: n1, dcgm_config: persistence_mode}", "dcgm_config", "never plays: "
     "the spec runs no DCGM diagnostic (add gpus.dcgm_diag: r1, r2, r3 or r4)"),
])
def test_a_fault_that_would_never_play_is_one_error_at_its_key(
        head: str, fault: str, path: str, message: str) -> None:
    """A NIC beyond the simulated nodes' (n2 was ACCEPTED), a DCGM finding in a spec that
    runs no DCGM diagnostic: the fault's line, not a run that plays nothing."""
    text = head + f"sim:\n  faults:\n    - {fault}\n"
    line = text.count("\n")
    assert error_of(text) == f"t.yaml:{line}: sim.faults[0].{path}: {message}"
    sized = SIM_BASE + _nics(16) + "sim:\n  faults:\n    - {node: n2, nic: 9, nic_down: true}\n"
    assert [f.nic for f in parse_spec(sized, "t.yaml").sim.faults] == [9]  # type: ignore[union-attr]


@pytest.mark.parametrize(("sim", "message"), [
    ("sim: {faults: {node: n1}}\n", "t.yaml:3: sim.faults: expected a list of faults, got "
     "a map"),
    ("sim: {memory: 1 MiB}\n", "t.yaml:3: sim.memory: expected a size of at least 1 GiB "
     "like '2 TiB', got '1 MiB'"),
    ("sim: {storage_rate: 0 GB/s}\n", "t.yaml:3: sim.storage_rate: expected a rate above 0 "
     "like '400 GB/s', got '0 GB/s'"),
    ("sim: {gpus_per_node: 65}\n", "t.yaml:3: sim.gpus_per_node: expected a whole number "
     "from 1 to 64, got 65"),
    ("sim: {dcgm: 5}\n", "t.yaml:3: sim.dcgm: expected 3 or 4 (the DCGM whose JSON the node "
     "prints) or none (no dcgmi), got '5'"),
])
def test_the_sections_own_keys_are_refused_exactly(sim: str, message: str) -> None:
    assert error_of(SIM_BASE + sim) == message


def test_a_sim_launcher_without_a_sim_section_is_refused() -> None:
    assert error_of(SIM_BASE) == ("t.yaml: sim: missing: launcher sim needs a sim section "
                                  "(gpu_model, gpus_per_node, faults)")


# -- moved from tests/contract/test_loader_slips.py and test_loader.py ----------------------

@pytest.mark.parametrize(("fault", "what"), [
    ("link_factor: 0.5", "link_factor is a node fault (the node's network)"),
    ("gpus: 7", "gpus is a node fault (the node's GPU count)"),
    ("down: true", "down is a node fault (the whole node)"),
    ("lies: gpu_figures", "lies is a node fault (what the node reports)"),
])
def test_a_node_fault_on_a_gpu_is_refused(fault: str, what: str) -> None:
    text = SIM_BASE + f"sim:\n  faults:\n    - {{node: n1, gpu: 2, {fault}}}\n"
    key = fault.split(":", maxsplit=1)[0]
    assert error_of(text) == (f"t.yaml:5: sim.faults[0].{key}: {what}, not a GPU's: give it "
                              "without gpu")


def test_a_lie_is_one_the_sim_knows() -> None:
    """`lies:` names a claim the simulated node makes instead of what it measured, one of
    LIES; another word is refused naming them all."""
    text = SIM_BASE + "sim:\n  faults:\n    - {node: n1, lies: everything}\n"
    assert error_of(text) == (f"t.yaml:5: sim.faults[0].lies: expected one of "
                              f"{', '.join(LIES)} (what the node claims instead of what it "
                              "measured), got 'everything'")
    spec = parse_spec(text.replace("everything", "cores"), "t.yaml")
    assert spec.sim is not None
    assert [f.lies for f in spec.sim.faults] == ["cores"]


@pytest.mark.parametrize(("per_node", "fault", "shown"), [
    ("", "{node: n1, gpu: 9, memory_held: 5 GiB}", "from 0 to 7 (sim.gpus_per_node: 8), got 9"),
    ("", "{node: n1, gpu: 9, matmul_factor: 0.8}", "from 0 to 7 (sim.gpus_per_node: 8), got 9"),
    ("  gpus_per_node: 4\n", "{node: n1, gpu: 4, throttle: hw_slowdown}",
     "from 0 to 3 (sim.gpus_per_node: 4), got 4"),
])
def test_a_gpu_index_out_of_range_is_one_error(per_node: str, fault: str, shown: str) -> None:
    text = SIM_BASE + f"sim:\n{per_node}  faults:\n    - {fault}\n"
    line = 5 + bool(per_node)
    assert error_of(text) == f"t.yaml:{line}: sim.faults[0].gpu: expected a GPU index {shown}"


@pytest.mark.parametrize(("rounds", "message"), [
    ("from_round: 3, until_round: 2", "expected the last round the fault is on, from "
     "from_round (3) on, got 2"),
    ("until_round: 0", "expected a whole number >= 1, got 0"),
])
def test_a_fault_repaired_before_it_starts_is_refused(rounds: str, message: str) -> None:
    text = SIM_BASE + f"sim:\n  faults:\n    - {{node: n1, down: true, {rounds}}}\n"
    assert error_of(text) == f"t.yaml:5: sim.faults[0].until_round: {message}"
    spec = parse_spec(text.replace(rounds, "from_round: 2, until_round: 3"), "t.yaml")
    assert spec.sim is not None
    assert [(f.from_round, f.until_round) for f in spec.sim.faults] == [(2, 3)]


@pytest.mark.parametrize("sim", ["sim:\n", "sim: {}\n", "sim: ~\n"])
def test_an_empty_sim_section_takes_every_default(sim: str) -> None:
    spec = parse_spec(SIM_BASE + sim, "t.yaml")
    assert spec.sim == SimSpec(gpu_model="H100-SXM-80GB", gpus_per_node=8)


def test_the_spec_knows_the_throttle_reasons_the_gpu_probe_reads() -> None:
    from pytest_cluster.probes.gpu import THROTTLE_BITS

    assert tuple(THROTTLE_BITS) == THROTTLES


@pytest.mark.parametrize(("sim", "version"), [("sim: {dcgm: 3}\n", 3), ("sim: {dcgm: 4}\n", 4),
                                              ("sim: {dcgm: none}\n", None), ("sim:\n", 4)])
def test_the_dcgm_a_simulated_node_has_is_read(sim: str, version: int | None) -> None:
    """DCGM 4.x by default; 3.x prints the other shape; none has no dcgmi."""
    spec = parse_spec(SIM_BASE + sim, "t.yaml")
    assert spec.sim is not None and spec.sim.dcgm == version


@pytest.mark.parametrize("prefix", ["MLX5_", "mlx5_ib0", "mlx5/ib", "''", "[mlx5_]"])
def test_a_nic_prefix_is_a_device_name_start(prefix: str) -> None:
    said = error_of(SIM_BASE + f"sim: {{nic_prefix: {prefix}}}\n")
    assert said.startswith("t.yaml:3: sim.nic_prefix: expected a device name's start like "
                           "'mlx5_' or 'mlx5_ib'"), said


def test_a_nic_prefix_names_the_simulated_devices() -> None:
    spec = parse_spec(SIM_BASE + "sim: {nic_prefix: mlx5_ib}\n", "t.yaml")
    assert spec.sim is not None and spec.sim.nic_prefix == "mlx5_ib"
    assert parse_spec(SIM_BASE + "sim: {}\n", "t.yaml").sim == SimSpec("H100-SXM-80GB", 8)

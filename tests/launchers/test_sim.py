"""launchers/sim.py: the sim launcher's answers to the calls a real launcher gets, every one
marked simulated: host facts from the description, the real GPU probe over the simulated
NVML, a node the spec's faults take down, what it does not simulate, a run interrupted,
and nccl-tests as one step."""

from __future__ import annotations

import dataclasses
import json
import os

import pytest

from pytest_cluster.contract import parse_spec
from pytest_cluster.contract.model import Spec
from pytest_cluster.launchers import ErrorKind, get_launcher
from pytest_cluster.launchers import sim as sim_launcher
from pytest_cluster.launchers.jobs import JobSpec, node_call
from pytest_cluster.launchers.process import INTERRUPTED_MESSAGE
from pytest_cluster.launchers.result import ProgramRun
from pytest_cluster.launchers.sim import NODE_ENV, SIM_NVML_DIR, SimLauncher, gpu_probe_env
from pytest_cluster.probes import PROBES, ProbeCall
from pytest_cluster.sim.answers import JOBS
from pytest_cluster.sim.answers import PROBES as ANSWERED
from pytest_cluster.sim.cluster import describe_node

GPUS = 8
TEXT = ("cluster: {name: s, nodes: 'n[1-3]', launcher: sim}\n"
        "host: {cpu_cores: '>= 1'}\n"
        f"sim:\n  gpus_per_node: {GPUS}\n  faults:\n    - {{node: n2, down: true}}\n")
DOWN_LINE = TEXT.splitlines().index("    - {node: n2, down: true}") + 1
NCCL_TESTS = ["/opt/nt/all_reduce_perf", "-b", "8", "-e", "64", "-g", "1"]


def spec(text: str = TEXT) -> Spec:
    return parse_spec(text, "t.yaml")


def launcher(text: str = TEXT) -> SimLauncher:
    made = get_launcher(spec(text))
    assert isinstance(made, SimLauncher)
    return made


def test_host_facts_come_from_the_description_marked_simulated() -> None:
    results = launcher().run(ProbeCall("host"), ["n1", "n3"], 60)
    assert list(results) == ["n1", "n3"]
    for node, result in results.items():
        assert result.ok and result.simulated and result.exit_code == 0, result.describe()
        assert result.payload()["hostname"] == node


def test_a_node_a_fault_takes_down_does_not_answer_naming_the_faults_line() -> None:
    (result,) = launcher().run(ProbeCall("host"), ["n2"], 60).values()
    assert (result.error, result.simulated) == (ErrorKind.UNREACHABLE, True)
    assert result.message == ("simulated: the node does not answer (sim fault at spec "
                              f"line {DOWN_LINE})")


def test_the_gpu_probe_is_the_real_one_over_the_simulated_nvml() -> None:
    (result,) = launcher().run(ProbeCall("gpu"), ["n1"], 60).values()
    assert result.ok and result.simulated, result.describe()
    data = result.payload()
    assert (data["simulated_nvml"], data["count"], len(data["gpus"])) == (True, GPUS, GPUS)


def test_a_gpu_probes_environment_puts_the_simulated_nvml_first() -> None:
    sim = spec().sim
    assert sim is not None
    description = describe_node(sim, "n1")
    base = {"PYTHONPATH": "/elsewhere", "HOME": "/home/me"}
    env = gpu_probe_env(base, description)
    assert env["PYTHONPATH"] == f"{SIM_NVML_DIR}{os.pathsep}/elsewhere"
    assert json.loads(env[NODE_ENV]) == json.loads(json.dumps(description))
    assert env["HOME"] == "/home/me" and base == {"PYTHONPATH": "/elsewhere",
                                                  "HOME": "/home/me"}
    assert gpu_probe_env({}, description)["PYTHONPATH"] == str(SIM_NVML_DIR)


def test_a_node_says_its_name_is_its_address() -> None:
    (result,) = launcher().run(ProbeCall("job_node", ("--whereami",)), ["n3"], 60).values()
    assert result.payload() == {"addresses": ["n3"], "hostname": "n3"}
    assert launcher().master_address("n3", 60) == "n3"


@pytest.mark.parametrize("probe", [p for p in PROBES
                                   if p not in ANSWERED and p not in ("gpu", "job_node")])
def test_a_probe_it_does_not_simulate_is_a_crash_saying_so(probe: str) -> None:
    (result,) = launcher().run(ProbeCall(probe), ["n1"], 60).values()
    assert (result.error, result.message, result.simulated) == (
        ErrorKind.CRASHED, f"the sim launcher does not simulate the {probe} probe", True)


def test_a_job_of_a_program_it_does_not_play_is_a_crash_naming_those_it_plays() -> None:
    call = node_call(JobSpec(("n1",), "print('not ours')"), "n1", 29500, 0)
    (result,) = launcher().run(call, ["n1"], 60).values()
    assert (result.error, result.message) == (
        ErrorKind.CRASHED, "the sim launcher simulates no job but these rank programs: "
                           + ", ".join(f"probes/{name}.py" for name in JOBS))


def test_an_interrupted_run_answers_no_more_probes(monkeypatch: pytest.MonkeyPatch) -> None:
    """A simulated latency is waited out unless the run is interrupted: then at once."""
    monkeypatch.setattr(sim_launcher, "interrupted", lambda: True)
    slow = launcher(TEXT.replace("sim:\n", "sim:\n  latency: 1 min\n"))
    (result,) = slow.run(ProbeCall("host"), ["n1"], 60).values()
    assert (result.error, result.message, result.simulated) == (
        ErrorKind.CANCELLED, INTERRUPTED_MESSAGE, True)


def test_nccl_tests_run_as_one_step_unless_a_node_does_not_answer() -> None:
    sim = launcher()
    run = sim.run_program(NCCL_TESTS, ["n1", "n3"], GPUS, 60)
    assert run is not None and (run.exit_code, run.simulated) == (0, True)
    assert run.first_task.startswith("# nccl-tests version ")
    assert sim.run_program(NCCL_TESTS, ["n1", "n2"], GPUS, 60) == ProgramRun(
        "unavailable", "", "simulated: n2 does not answer", simulated=True)
    assert sim.run_program(NCCL_TESTS[:1], ["n1"], GPUS, 60) == ProgramRun(
        1, "", "simulated: '-b'", simulated=True)
    other = sim.run_program(["/opt/nt/not_a_test", *NCCL_TESTS[1:]], ["n1"], GPUS, 60)
    assert other == ProgramRun(1, "", "simulated: the sim does not simulate nccl-tests' "
                                      "'not_a_test'", simulated=True)


def test_a_spec_without_its_sim_section_is_refused() -> None:
    with pytest.raises(ValueError, match="launcher sim needs the spec's sim section"):
        SimLauncher.from_spec(dataclasses.replace(spec(), sim=None))

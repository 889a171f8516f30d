"""--cluster-soak: the suite in rounds. A round's command line and a
case over the rounds as pure functions; then whole soaks of the sim cluster: a fault that
starts at round 3 is named at round 3, a dead node's downtime and the SLA credit come out
of the rounds, Ctrl-C keeps every finished round, and a stopped soak goes on."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from decimal import Decimal
from html import escape
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from pytest_cluster.evidence.bundle.verify import verify
from pytest_cluster.evidence.record.end import verdict_schema
from pytest_cluster.evidence.sinks.results import read_results
from pytest_cluster.evidence.verdict import gate
from pytest_cluster.evidence.verdict.nodes import ERROR, PASS
from pytest_cluster.sim import round as round_env
from pytest_cluster.soak import rounds as soak

# -- whole soaks of the sim cluster ---------------------------------------------------------

SPEC = """\
cluster: {{name: soak, nodes: "n[1-3]", launcher: sim}}
gpus:
  count: 8
  ecc_uncorrected: 0
  matmul: {{bf16: ">= 500 TFLOPS"}}
{extra}sim:
  gpus_per_node: 8
  faults:
{faults}"""
ROUND3 = """\
    - {node: n2, gpu: 5, ecc_uncorrected: 4, from_round: 3}
    - {node: n2, gpu: 6, matmul_factor: 0.8, from_round: 3}
"""
SLA = """\
sla:
  uptime: 99.5%
  down_after: 0 s
  price_per_node_hour: 20000.0
  credits: [{below: 99.5%, credit: 10%}, {below: 90%, credit: 50%}]
"""


def _soak(pytester: pytest.Pytester, *args: str, faults: str = ROUND3,
          extra: str = "") -> pytest.RunResult:
    (pytester.path / "trial.yaml").write_text(SPEC.format(faults=faults, extra=extra))
    return pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                              "--cluster-reports=reports", *args)


def _lines(path: Path, kind: str) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as lines:
        return [r for r in map(json.loads, lines) if r.get("type") == kind]


@pytest.mark.slow
def test_a_fault_that_starts_at_round_3_is_named_at_round_3(
        pytester: pytest.Pytester) -> None:
    result = _soak(pytester, "--cluster-soak-rounds=4")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([
        "soak round 1 of 4: complete, * passed, 0 failed in *nodes failing so far: none",
        "soak round 2 of 4: complete, * 0 failed in *",
        "soak round 3 of 4: complete, * 1 failed in *nodes failing so far: n2 (since round 3)",
        "soak round 4 of 4: *"])
    soak_dir = (pytester.path / "reports" / "latest").resolve()
    assert soak.round_numbers(soak_dir) == [1, 2, 3, 4]
    for number in range(1, 5):  # every round is a whole run with its own sealed evidence
        assert verify(soak_dir / "rounds" / soak.round_name(number), None).ok
    assert verify(soak_dir, None).ok
    run = read_results(soak_dir / "results.jsonl")
    by_case = {r["case"]: r for r in run.results}
    counted = by_case["pytest_cluster/soak.py::test_counters_steady[n2]"]
    assert counted["outcome"] == "failed"
    assert "gpu5 GPU-" in counted["message"]
    assert "ECC uncorrected 0 -> 4 (+4; volatile 0 -> 4) at round 3 (" in counted["message"]
    assert counted["message"].count("ECC uncorrected") == 1
    assert "against round 1" in counted["message"]
    assert by_case["pytest_cluster/soak.py::test_counters_steady[n1]"]["outcome"] == "passed"
    ecc = by_case["acceptance/test_gpus.py::test_gpu_ecc[n2-gpu5]"]
    assert ecc["rounds_failed"] == [[3, 4]]
    assert ecc["message"].startswith("[SIMULATED] failed in 2 of 4 round(s) (rounds 3-4); "
                                     "rounds 3-4: n2 gpu5 ecc_uncorrected: measured 4 > ")
    steady = [r for r in run.results if r["clause"] == "soak.stability[gpus.matmul.bf16]"
              and r["outcome"] == "failed"]
    assert [(r["node"], r["gpu"]) for r in steady] == [("n2", 6)]
    assert "worst round 3" in steady[0]["message"] and "below round 1's" in \
        steady[0]["message"]
    # each round's lines that did not pass, with its number and UTC time
    copied = _lines(soak_dir / "results.jsonl", "round_result")
    assert {r["round"] for r in copied} == {3, 4}
    assert {r["outcome"] for r in copied} == {"failed"}
    assert all(r["utc"].endswith("Z") for r in copied)
    rounds = _lines(soak_dir / "results.jsonl", "round")
    assert [r["nodes"].get("failed", []) for r in rounds] == [[], [], ["n2"], ["n2"]]
    assert run.end is not None and run.end["soak"]["rounds"] == 4
    junit = (soak_dir / "junit.xml").read_text()
    for node in ("n1", "n2", "n3"):
        assert f'name="test_available[{node}]"' in junit
    assert "<h2>[SIMULATED] Soak</h2>" in (soak_dir / "report.html").read_text()


@pytest.mark.slow
def test_a_gpu_whose_matmul_goes_wrong_at_round_3_is_named_at_round_3(
        pytester: pytest.Pytester) -> None:
    """The stress level's silent-data-corruption check, soaked: the GPU is named by its
    node's other GPUs in round 3, and against its own round 1."""
    wrong = "    - {node: n2, gpu: 6, sdc: true, from_round: 3}\n"
    result = _soak(pytester, "-m", "stress", "--cluster-soak-rounds=3", faults=wrong,
                   extra="")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    soak_dir = (pytester.path / "reports" / "latest").resolve()
    by_case = {r["case"]: r for r in read_results(soak_dir / "results.jsonl").results}
    sdc = by_case["acceptance/test_gpus.py::test_gpu_sdc[n2-gpu6]"]
    assert sdc["rounds_failed"] == [[3, 3]]
    assert "silent data corruption: 2 different results over 8 repeats" in sdc["message"]
    assert "which 7 of the node's 8 GPUs give on identical inputs" in sdc["message"]
    assert [c for c, r in by_case.items() if r["outcome"] == "failed"
            and "test_gpu_sdc" in c] == ["acceptance/test_gpus.py::test_gpu_sdc[n2-gpu6]"]
    counted = by_case["pytest_cluster/soak.py::test_counters_steady[n2]"]
    assert counted["outcome"] == "failed"
    assert ": matmul checksum 0x" in counted["message"]
    assert "at round 3 (" in counted["message"] and "differs from round 1's 0x" in \
        counted["message"]
    throttle = by_case["acceptance/test_gpus.py::test_gpu_stress_throttle[n1-gpu0]"]
    assert throttle["outcome"] == "passed" and throttle["rounds"] == 3


@pytest.mark.slow
def test_a_dead_node_loses_its_rounds_and_the_sla_says_what_is_owed(
        pytester: pytest.Pytester) -> None:
    down = "    - {node: n3, down: true, from_round: 2}\n"
    result = _soak(pytester, "--cluster-soak-rounds=3", faults=down, extra=SLA)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    soak_dir = (pytester.path / "reports" / "latest").resolve()
    run = read_results(soak_dir / "results.jsonl")
    by_case = {r["case"]: r for r in run.results}
    assert by_case["pytest_cluster/soak.py::test_available[n1]"]["outcome"] == "passed"
    dead = by_case["pytest_cluster/soak.py::test_available[n3]"]
    assert dead["outcome"] == "failed"
    rounds = _lines(soak_dir / "results.jsonl", "round")
    assert [r["nodes"].get("unreachable", []) for r in rounds] == [[], ["n3"], ["n3"]]
    # down from round 2's start to the end of the soak
    assert dead["down_s"] == pytest.approx(rounds[2]["ended_at"] - rounds[1]["started_at"],
                                           abs=0.01)
    window = rounds[2]["ended_at"] - rounds[0]["started_at"]
    # from the node-hours down and in the window, each to 6 places (3.6 ms) as printed:
    # up to 3.6 ms over the window apart (these rounds take about a second each)
    assert dead["availability"] == pytest.approx(1 - dead["down_s"] / window,
                                                 abs=0.0036 / window + 1e-6)
    assert dead["message"].startswith("[SIMULATED] n3: down ")
    assert "below 90 %: 50 % of" in dead["message"]
    owed = by_case["pytest_cluster/soak.py::test_no_credit_owed[cluster]"]
    assert owed["outcome"] == "failed" and "credit owed: " in owed["message"]
    assert run.end is not None
    total = Decimal(run.end["soak"]["credit"]["owed"])
    assert float(total) == pytest.approx(0.5 * 20000.0 * window / 3600, rel=1e-3)
    # the same sum everywhere: per node and in total, results.jsonl, JUnit, terminal
    parts = [Decimal(by_case[f"pytest_cluster/soak.py::test_available[{n}]"]["credit"])
             for n in ("n1", "n2", "n3")]
    assert sum(parts) == total and parts[2] == total and parts[0] == Decimal("0.00")
    junit = ET.parse(soak_dir / "junit.xml").getroot()
    per_node = [Decimal(p.get("value", "")) for p in junit.iter("property")
                if p.get("name") == "credit"]
    assert sorted(per_node) == sorted(parts)
    suite = {p.get("name"): p.get("value") for p in junit.iter("property")}
    assert suite["sla_credit"] == f"credit owed: {total} = {total} USD (1 of 3 node(s))"
    result.stdout.fnmatch_lines([f"*SLA: credit owed: {total} = {total} USD (1 of 3 node(s))"])
    report = (soak_dir / "report.html").read_text()
    assert "<h3>[SIMULATED] SLA credit</h3>" in report
    assert f"<b>[SIMULATED] credit owed: {total} = {total} USD" in report
    # node-hours at the one precision the credit is computed with, as a string
    lost = dead["node_hours_lost"]
    assert isinstance(lost, str) and Decimal(lost) == Decimal(lost).quantize(Decimal("1e-6"))
    assert f"n3: down {lost} h of " in dead["message"]
    result.stdout.fnmatch_lines([f"*n3: * available, down *:* ({lost} node-hours)"])


@pytest.mark.slow
def test_a_node_repaired_after_round_2_is_down_for_round_2_alone(
        pytester: pytest.Pytester) -> None:
    """A node down at round 2 only (the sim's `until_round`: repaired after it) and a GPU
    with an XID at rounds 2-3: each is down from the round it failed until the first
    round it passed again, not to the soak's end; the rounds before and after count as
    up, and its checks say which rounds failed."""
    faults = ("    - {node: n3, down: true, from_round: 2, until_round: 2}\n"
              "    - {node: n2, gpu: 1, xid: 79, from_round: 2, until_round: 3}\n")
    result = _soak(pytester, "--cluster-soak-rounds=4", faults=faults, extra=SLA)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    soak_dir = (pytester.path / "reports" / "latest").resolve()
    rounds = _lines(soak_dir / "results.jsonl", "round")
    assert [(r["nodes"].get("unreachable", []), r["nodes"].get("failed", []))
            for r in rounds] == [([], []), (["n3"], ["n2"]), ([], ["n2"]), ([], [])]
    by_case = {r["case"]: r for r in read_results(soak_dir / "results.jsonl").results}
    n3, n2 = (by_case[f"pytest_cluster/soak.py::test_available[{n}]"] for n in ("n3", "n2"))
    assert n3["down_s"] == pytest.approx(rounds[2]["started_at"] - rounds[1]["started_at"],
                                         abs=0.01)
    assert n2["down_s"] == pytest.approx(rounds[3]["started_at"] - rounds[1]["started_at"],
                                         abs=0.01)
    assert by_case["pytest_cluster/soak.py::test_available[n1]"]["down_s"] == 0
    xid = by_case["acceptance/test_gpus.py::test_gpu_xid[n2-gpu1]"]
    assert xid["rounds_failed"] == [[2, 3]]
    assert by_case["acceptance/test_gpus.py::test_gpu_xid[n3-gpu0]"]["rounds_failed"] == [
        [2, 2]]
    assert by_case["acceptance/test_gpus.py::test_gpu_xid[n1-gpu0]"]["outcome"] == "passed"


@pytest.mark.slow
def test_a_stopped_soak_goes_on_where_it_stopped(pytester: pytest.Pytester) -> None:
    assert _soak(pytester, "--cluster-soak-rounds=1", faults="").ret == pytest.ExitCode.OK
    soak_dir = (pytester.path / "reports" / "latest").resolve()
    first = (soak_dir / "results.jsonl").read_bytes()
    again = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                               "--cluster-reports=reports", f"--cluster-soak-resume={soak_dir}",
                               "--cluster-soak-rounds=2")
    assert again.ret == pytest.ExitCode.OK
    assert soak.round_numbers(soak_dir) == [1, 2]
    # the first session's evidence is kept whole, its manifest still verifies it there
    assert (soak_dir / "stops" / "stop-01" / "results.jsonl").read_bytes() == first
    rounds = _lines(soak_dir / "results.jsonl", "round")
    assert [r["round"] for r in rounds] == [1, 2]
    assert verify(soak_dir, None).ok
    # the pause while it was stopped (seconds here) is not observed: neither up nor down
    run = read_results(soak_dir / "results.jsonl")
    assert run.end is not None
    paused = rounds[1]["started_at"] - rounds[0]["ended_at"]
    assert paused > 0 and run.end["soak"]["unobserved_s"] == pytest.approx(paused, abs=0.002)
    ran = sum(r["ended_at"] - r["started_at"] for r in rounds)
    assert run.end["soak"]["observed_s"] == pytest.approx(ran, abs=0.002)
    available = {r["case"]: r for r in run.results}[
        "pytest_cluster/soak.py::test_available[n1]"]
    assert available["observed_s"] == pytest.approx(ran, abs=0.002)
    assert (soak_dir / "logs" / "session-0002.json").is_file()
    # the resumed session's round runs the soak's pinned spec, as the first session's did
    resumed = read_results(soak_dir / "rounds" / soak.round_name(2) / "results.jsonl")
    assert Path(str(resumed.run["spec"])).resolve() == soak_dir / soak.SPEC_FILE
    # the first session's manifest, moved with its files, checks them through the soak:
    # its rounds, logs and soak.json stayed in the soak
    stop = verify(soak_dir / "stops" / "stop-01", None)
    assert stop.ok and stop.soak == soak_dir and stop.checked > 3, stop.lines()
    assert stop.lines()[1].startswith(f"soak: this is a stopped session of the soak "
                                      f"{soak_dir}: the soak.json, spec.yaml, rounds, logs, "
                                      f"stops it")
    assert stop.final_line() == "FILES MATCH, UNSIGNED"
    # another spec cannot go on with it
    (pytester.path / "other.yaml").write_text(SPEC.format(faults="", extra="soak: "
                                                           "{spread: 3%}\n"))
    refused = pytester.runpytest("--cluster=other.yaml", "--cluster-reports=reports",
                                 f"--cluster-soak-resume={soak_dir}")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    refused.stderr.fnmatch_lines(["*is a soak of another spec*"])


@pytest.mark.slow
def test_a_soak_shorter_than_a_round_still_runs_its_first_round(
        pytester: pytest.Pytester) -> None:
    """The duration bounds when a round may start: the first always does, so a soak never
    ends having checked nothing, nor says it was interrupted when nothing interrupted it."""
    result = _soak(pytester, "--cluster-soak=1ms", faults="")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["soak round 1: complete, * passed, 0 failed in *"])
    assert "interrupted" not in result.stdout.str() and "INCOMPLETE" not in \
        result.stdout.str()
    soak_dir = (pytester.path / "reports" / "latest").resolve()
    assert soak.round_numbers(soak_dir) == [1]
    run = read_results(soak_dir / "results.jsonl")
    assert run.end is not None and run.end["status"] == "complete"
    assert run.end["checks_ran"] == run.end["checks_planned"] > 0
    assert run.end["soak"]["rounds"] == 1


@pytest.mark.slow
def test_a_soak_whose_first_round_cannot_start_checked_nothing_and_says_so(
        pytester: pytest.Pytester) -> None:
    """A round that left no results (here a conftest that breaks in the rounds only) ends
    the soak; with no round before it nothing was checked: the round's exit status (a
    usage error), never 0, and no word of an interruption."""
    pytester.makeconftest(f"import os\nif os.environ.get({round_env.ENV!r}):\n"
                          "    raise RuntimeError('broken in the round')\n")
    result = _soak(pytester, "--cluster-soak-rounds=2", faults="")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines([
        "*soak: no round finished (*",
        "  soak stopped: round 1 left no results (exit status 4); see *broken in the round",
        "INCOMPLETE: 0 of * contract checks ran (the soak stopped: round 1 left no results "
        "(exit status 4))"])
    assert "(interrupted)" not in result.stdout.str()


@pytest.mark.parametrize(("args", "says"), [
    (["--cluster-soak=2d"], "--cluster-soak=2d: expected a duration like*"),
    (["--cluster-soak-rounds=0"], "--cluster-soak-rounds=0: expected a whole number of rounds "
                                  "from 1 to 1,000,000, got 0"),
    (["--cluster-soak=1h", "--cluster-reports="], "*it needs --cluster-reports=DIR*"),
    (["--cluster-soak-resume=nowhere"], "*nowhere is not a soak's directory*"),
])
def test_a_soak_asked_wrongly_is_a_usage_error(pytester: pytest.Pytester, args: list[str],
                                               says: str) -> None:
    (pytester.path / "trial.yaml").write_text(SPEC.format(faults="", extra=""))
    result = pytester.runpytest("--cluster=trial.yaml", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{says}"])


@pytest.mark.slow
def test_ctrl_c_ends_the_soak_with_every_finished_round_kept(tmp_path: Path) -> None:
    (tmp_path / "trial.yaml").write_text(
        "cluster: {name: slow, nodes: [n1, n2], launcher: sim}\n"
        "gpus: {count: 8}\nsim: {gpus_per_node: 8, latency: 1 s}\n")
    soaking = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--cluster=trial.yaml",
         "--cluster-soak=1h", "-q"], cwd=tmp_path, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, start_new_session=True)
    rounds = tmp_path / "reports"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not list(rounds.glob("*/rounds/round-0002")):
        time.sleep(0.2)
    time.sleep(1.0)  # round 2 is under way
    os.killpg(soaking.pid, signal.SIGINT)  # Ctrl-C reaches the terminal's process group
    output, _ = soaking.communicate(timeout=180)
    assert soaking.returncode == pytest.ExitCode.INTERRUPTED, output.decode()[-2000:]
    # the verdict's reason is why it is INCOMPLETE: the soak was stopped in a round
    # (every node was judged in the rounds before: not 'not every node was judged')
    assert re.search(r"^verdict: INCOMPLETE at level acceptance \(ERROR: the soak was "
                     r"stopped: round \d+ not finished; none is drained for it\)"
                     r"(; level acceptance covers sanity and acceptance)?$",
                     output.decode(), re.M), output.decode()[-2000:]
    soak_dir = next(rounds.glob("*-slow"))
    numbers = soak.round_numbers(soak_dir)
    assert numbers[:2] == [1, 2]
    for number in numbers:
        assert verify(soak_dir / "rounds" / soak.round_name(number), None).ok
    run = read_results(soak_dir / "results.jsonl")
    assert run.end is not None and run.end["status"] == "interrupted"
    assert run.end["soak"]["rounds"] == len(numbers)
    assert verify(soak_dir, None).ok
    # nothing of the soak is left running
    left = subprocess.run(["pgrep", "-f", f"--cluster-reports={soak_dir}"],
                          capture_output=True, text=True, check=False)
    assert left.stdout.strip() == ""


@pytest.mark.slow
def test_a_port_that_goes_down_from_round_2_is_named_at_round_2(
        pytester: pytest.Pytester) -> None:
    """A soak of the fabric: each round reads every port before its first case and after
    its last; across rounds, the NIC counters are compared with the first round's. A port
    that went down from round 2 on fails that round's counters case, and the soak's
    counters case names the port and round 2."""
    (pytester.path / "trial.yaml").write_text(
        'cluster: {name: soak, nodes: "n[1-3]", launcher: sim}\n'
        "fabric: {ports: 8, rate: 400 Gb/s, flap: 0.2 s}\n"
        "sim:\n  faults:\n    - {node: n3, nic: 1, nic_link_downed: 3, from_round: 2}\n"
        "    - {node: n2, nic: 4, nic_down: true, from_round: 2}\n")
    result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                                "--cluster-reports=reports", "--cluster-soak-rounds=3")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    soak_dir = (pytester.path / "reports" / "latest").resolve()
    by_case = {r["case"]: r for r in read_results(soak_dir / "results.jsonl").results}
    counted = by_case["pytest_cluster/soak.py::test_counters_steady[n3]"]
    assert counted["outcome"] == "failed"
    assert counted["message"].startswith(
        "[SIMULATED] n3 mlx5_1/1: link_downed 0 -> 3 at round 2 (")
    assert counted["message"].endswith("), against round 1")
    assert by_case["pytest_cluster/soak.py::test_counters_steady[n1]"]["outcome"] == "passed"
    down = by_case["pytest_cluster/soak.py::test_counters_steady[n2]"]
    assert re.fullmatch(r"\[SIMULATED\] n2 mlx5_4/1: down \(DOWN, Disabled\) for at least "
                        r"\d+ s, from round 2 \(\S+Z\) to round [23] \(\S+Z\): fabric\.flap "
                        r"is 0\.2 s", down["message"]), down["message"]
    per_round = by_case["acceptance/test_fabric.py::test_fabric_counters[n3]"]
    assert per_round["rounds_failed"] == [[2, 3]]


@pytest.mark.slow
def test_a_counter_that_grew_is_shown_as_measured_not_as_could_not_measure(
        pytester: pytest.Pytester) -> None:
    """The clauses table says what the soak's counters case measured (the change, where and
    at which round), never 'could not measure' where it did measure."""
    grew = "    - {node: n2, gpu: 5, ecc_uncorrected: 4, from_round: 2}\n"
    result = _soak(pytester, "--cluster-soak-rounds=2", faults=grew)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    soak_dir = (pytester.path / "reports" / "latest").resolve()
    counted = {r["node"]: r for r in read_results(soak_dir / "results.jsonl").results
               if r["clause"] == "soak.counters"}
    assert counted["n2"]["outcome"] == "failed"
    change = "ECC uncorrected 0 -> 4 (+4; volatile 0 -> 4) at round 2"  # the fault's 4
    assert counted["n2"]["measured"] == f"gpu5 {change}"
    assert f": {change} (" in counted["n2"]["message"]  # the same change, in full
    assert {counted[n]["measured"] for n in ("n1", "n3")} == {"no change over rounds 1-2"}
    html = (soak_dir / "report.html").read_text()
    row = html[html.index("<td>soak.counters"):]
    row = row[:row.index("</tr>")]
    assert f"<td>{escape(counted['n2']['measured'])} (n2)</td>" in row
    assert "could not measure" not in row


@pytest.mark.slow
def test_a_soak_that_observed_no_node_states_no_availability_and_judges_no_sla(
        pytester: pytest.Pytester) -> None:
    """A soak whose only round was stopped before it judged any node (here a conftest
    that interrupts the rounds at their first check) observed nothing: no availability
    figure and no credit, and the SLA case is not judged (skipped, saying why), in every
    view; it never passes with no evidence behind it."""
    pytester.makeconftest(f"import os\n\nclass Stop:\n"
                          f"    def pytest_runtest_call(self, item):\n"
                          f"        raise KeyboardInterrupt\n\n"
                          f"def pytest_configure(config):\n"
                          f"    if os.environ.get({round_env.ENV!r}):\n"
                          f"        config.pluginmanager.register(Stop())\n")
    result = _soak(pytester, "--cluster-soak-rounds=1", "--cluster-metrics=soak.prom",
                   faults="", extra=SLA)
    output = result.stdout.str()
    assert "cluster 100 %" not in output and "SLA: no credit owed" not in output
    result.stdout.fnmatch_lines([
        "*soak: 1 round(s) (round 1 stopped before its end), * observed *",
        "  availability: not observed: no round judged a node",
        "  SLA: not judged: no node was observed"])
    soak_dir = (pytester.path / "reports" / "latest").resolve()
    run = read_results(soak_dir / "results.jsonl")
    by_case = {r["case"]: r for r in run.results}
    owed = by_case["pytest_cluster/soak.py::test_no_credit_owed[cluster]"]
    assert owed["outcome"] == "skipped"
    assert "not judged: no node was observed" in str(owed["message"])
    assert not [case for case in by_case if "test_available[" in case]
    assert run.end is not None and run.end["soak"]["availability"] == {}
    assert "credit" not in run.end["soak"]
    junit = ET.parse(soak_dir / "junit.xml").getroot()
    sla = next(tc for tc in junit.iter("testcase")
               if tc.get("name") == "test_no_credit_owed[cluster]")
    assert sla.find("skipped") is not None
    metrics = (pytester.path / "soak.prom").read_text()
    assert 'clause="soak.sla"' not in metrics and "pytest_cluster_soak_credit{" not in metrics
    report = (soak_dir / "report.html").read_text()
    assert "no node fell below" not in report  # the settlement's 'no credit owed: ...'
    assert "not judged: no node was observed" in report


def _gated(soak_dir: Path, exit_status: int) -> gate.Decision:
    """What `pytest-cluster gate` decides of the soak's verdict.json."""
    return gate.gate(soak_dir, exit_status)


@pytest.mark.slow
def test_a_soak_whose_second_round_cannot_start_is_incomplete_and_the_gate_says_so(
        pytester: pytest.Pytester) -> None:
    """A round after the first that left no results (here a conftest that breaks in
    round 2 only) ends the soak before all its rounds ran: INCOMPLETE, exit 2, saying
    which round and why in the terminal, the end record and verdict.json; the gate says
    ERROR with that reason, never PASS (exit 0 and ACCEPTED (PASS) before). Round 1's
    cases are still reported."""
    pytester.makeconftest(f"import os\nif os.environ.get({round_env.ENV!r}) == '2':\n"
                          "    raise RuntimeError('broken in round 2')\n")
    result = _soak(pytester, "--cluster-soak-rounds=3", faults="")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    why = "the soak stopped after round 1 of 3: round 2 left no results (exit status 4)"
    result.stdout.fnmatch_lines([
        "soak round 1 of 3: complete, * passed, 0 failed in *",
        "  soak stopped: round 2 left no results (exit status 4); see *broken in round 2",
        f"INCOMPLETE: * of * contract checks ran ({why})",
        f"verdict: INCOMPLETE at level acceptance (ERROR: {why}; none is drained for it)*"])
    assert "ACCEPTED (PASS)" not in result.stdout.str()
    soak_dir = (pytester.path / "reports" / "latest").resolve()
    run = read_results(soak_dir / "results.jsonl")
    assert run.end is not None and run.end["status"] == "interrupted"
    assert run.end["verdict"] == "INCOMPLETE"
    assert run.end["soak"]["rounds"] == 1
    assert run.end["soak"]["stopped"] == "round 2 left no results (exit status 4)"
    assert run.end["incomplete"] == why
    assert "broken in round 2" in run.end["soak"]["stopped_log"]
    passed = [r for r in run.results if r.get("outcome") == "passed"]
    assert passed and {r.get("rounds") for r in passed if "rounds" in r} == {1}
    verdict = json.loads((soak_dir / "verdict.json").read_text())
    assert (verdict["verdict"], verdict["outcome"]) == ("INCOMPLETE", "ERROR")
    assert verdict["incomplete"] == why
    Draft202012Validator(verdict_schema()).validate(verdict)
    decided = _gated(soak_dir, result.ret)
    assert decided.outcome == ERROR
    assert f"ERROR: the run's verdict is INCOMPLETE: {why}" in decided.lines
    assert "round 2 left no results" in (soak_dir / "report.html").read_text()
    # resumed once the round is fixed, it goes on past the round that could not start,
    # whose log stays as its session's manifest has it
    (pytester.path / "conftest.py").unlink()
    log = (soak_dir / "logs" / "round-0002.log").read_bytes()
    again = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                               "--cluster-reports=reports", f"--cluster-soak-resume={soak_dir}")
    assert again.ret == pytest.ExitCode.OK
    assert soak.round_numbers(soak_dir) == [1, 3, 4]
    assert (soak_dir / "logs" / "round-0002.log").read_bytes() == log
    assert verify(soak_dir / "stops" / "stop-01", None).ok
    assert _gated(soak_dir, again.ret).outcome == PASS


#: A round 2 whose start meets a Ctrl-C (or SIGTERM) to its soak: the round sends it to
#: its soak from its conftest, before it wrote anything, and waits to be stopped.
SIGNAL_AS_ROUND_2_STARTS = """\
import os, signal, time
if os.environ.get({env!r}) == "2":
    os.kill(os.getppid(), signal.{sig})
    time.sleep(120)
"""


@pytest.mark.slow
@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_a_soak_stopped_as_its_next_round_starts_is_incomplete_not_a_pass(
        pytester: pytest.Pytester, sig: str) -> None:
    """Ctrl-C or SIGTERM as round 2 starts stops round 2 before it leaves any result: the
    soak was interrupted after round 1, exit 2, INCOMPLETE, and the gate says ERROR (the
    round's death was taken for a round that could not start before: exit 0, ACCEPTED
    (PASS) after 1 of 6 rounds)."""
    pytester.makeconftest(SIGNAL_AS_ROUND_2_STARTS.format(env=round_env.ENV, sig=sig))
    (pytester.path / "trial.yaml").write_text(SPEC.format(faults="", extra=""))
    result = pytester.runpytest_subprocess(
        "--cluster=trial.yaml", "-p", "no:cacheprovider", "--cluster-reports=reports",
        "--cluster-soak-rounds=6", timeout=300)
    assert result.ret == pytest.ExitCode.INTERRUPTED, result.stdout.str()[-3000:]
    why = "the soak was stopped after round 1 of 6"
    result.stdout.fnmatch_lines([
        "soak round 1 of 6: complete, * passed, 0 failed in *",
        f"verdict: INCOMPLETE at level acceptance (ERROR: {why}; none is drained for it)*"])
    assert "left no results" not in result.stdout.str()
    soak_dir = (pytester.path / "reports" / "latest").resolve()
    run = read_results(soak_dir / "results.jsonl")
    assert run.end is not None and run.end["status"] == "interrupted"
    assert run.end["soak"]["rounds"] == 1 and "stopped" not in run.end["soak"]
    assert run.end["incomplete"] == why
    assert why in (soak_dir / "report.html").read_text()
    verdict = json.loads((soak_dir / "verdict.json").read_text())
    assert (verdict["verdict"], verdict["incomplete"]) == ("INCOMPLETE", why)
    decided = _gated(soak_dir, result.ret)
    assert decided.outcome == ERROR
    assert f"ERROR: the run's verdict is INCOMPLETE: {why}" in decided.lines


#: Round 1 edits the user's spec file (8 GPUs a node promised -> 9) as it starts.
EDIT_IN_ROUND_1 = """\
import os
from pathlib import Path
if os.environ.get({env!r}) == "1":
    spec = Path("trial.yaml")
    spec.write_text(spec.read_text().replace("count: 8", "count: 9"))
"""


@pytest.mark.slow
def test_a_spec_edited_mid_soak_is_said_and_never_used(pytester: pytest.Pytester) -> None:
    """The soak pins the spec it started with (SOAK/spec.yaml) and runs every round from
    it: an edit of the user's file mid-soak (count: 8 -> 9, which the sim's 8 GPUs would
    fail) is said once and not used, so round 2 still checks the original contract (it
    re-read the edited file before, and failed the new promise)."""
    pytester.makeconftest(EDIT_IN_ROUND_1.format(env=round_env.ENV))
    result = _soak(pytester, "--cluster-soak-rounds=3", faults="")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()[-3000:]
    original = SPEC.format(faults="", extra="")
    assert "count: 9" in (pytester.path / "trial.yaml").read_text()  # the edit happened
    soak_dir = (pytester.path / "reports" / "latest").resolve()
    pinned = soak_dir / soak.SPEC_FILE
    assert pinned.read_text() == original
    known = json.loads((soak_dir / soak.SOAK_FILE).read_text())
    said = [line for line in result.stdout.lines if "changed since the soak started" in line]
    assert len(said) == 1, said  # said once, not at every round after the edit
    found = re.fullmatch(r"soak: trial\.yaml changed since the soak started \(sha256 "
                         r"[0-9a-f]{16}\.\.\.\): the rounds go on with the spec the soak "
                         r"started with \(sha256 ([0-9a-f]{16})\.\.\.\), (.+); the edit is "
                         r"not used", said[0])
    assert found is not None, said[0]
    assert found[1] == known["spec_sha256"][:16]
    assert (pytester.path / found[2]).resolve() == pinned
    for number in soak.round_numbers(soak_dir):
        run = read_results(soak_dir / "rounds" / soak.round_name(number) / "results.jsonl")
        assert run.run["spec_sha256"] == known["spec_sha256"]
        assert Path(str(run.run["spec"])).resolve() == pinned
    assert soak.round_numbers(soak_dir) == [1, 2, 3]
    end = read_results(soak_dir / "results.jsonl").end
    assert end is not None and end["soak"]["spec_changed"] == said[0].removeprefix("soak: ")


RAS_SPEC = """\
cluster: {name: soak, nodes: "n[1-3]", launcher: sim}
gpus: {count: 8}
interconnect:
  intra_node: {kind: nvlink, rate: 450 GB/s}
  inter_node: {kind: infiniband, nics_per_node: 8, rate_per_nic: 400 Gb/s}
  payloads: [4 GiB]
  node_counts: [3]
  busbw: ">= 80%"
  node_network: false
sim:
  gpus_per_node: 8
  faults: [{node: n2, gpu: 1, nccl_dead: true, from_round: 2}]
"""


@pytest.mark.slow
def test_a_rounds_line_says_what_nccl_ras_said_in_its_hung_jobs(
        pytester: pytest.Pytester) -> None:
    """Round 1 has no hang (no RAS words); from round 2, n2's rank on GPU 1 is dead: the
    round's line carries RAS's naming of it, per hung case."""
    (pytester.path / "trial.yaml").write_text(RAS_SPEC)
    pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                       "--cluster-reports=reports", "--cluster-soak-rounds=2",
                       "-k", "collective")
    rounds = _lines(pytester.path / "reports" / "latest" / "results.jsonl", "round")
    assert [r["round"] for r in rounds] == [1, 2]
    assert rounds[0]["nccl_ras"] == []
    assert {r["node"] for r in rounds[1]["nccl_ras"]} == {"n2", "3 nodes (n1..n3)"}
    assert all("(n2, GPU 1) DEAD" in r["ras"] for r in rounds[1]["nccl_ras"])

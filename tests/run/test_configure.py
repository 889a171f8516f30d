"""Empty or absurd option values are usage errors before anything runs (issue 25, item 4):
an unset `$KEY` in CI must not run unsigned with exit 0, a soak of 100,000 hours or of
1e23 rounds must not start. Each error says what was expected, in one bounded line, and
no run directory is left."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_cluster.units import EXPECTED_DURATION

SPEC = "cluster: {name: opts, nodes: [n1], launcher: sim}\ngpus: {count: 8}\nsim: {}\n"


@pytest.mark.parametrize(("args", "says"), [
    (["--cluster-sign-key="],
     "ERROR: --cluster-sign-key=: expected the path of an Ed25519 private key file, got an "
     "empty value (an unset variable?); leave the option out to run unsigned"),
    (["--cluster-sign-key", " "],
     "ERROR: --cluster-sign-key=: expected the path of an Ed25519 private key file, got an "
     "empty value (an unset variable?); leave the option out to run unsigned"),
    (["--cluster-ssh-sign-key="],
     "ERROR: --cluster-ssh-sign-key=: expected the path of an OpenSSH key file, got an empty "
     "value (an unset variable?); leave the option out to run unsigned"),
    (["--cluster-soak=100000h"],
     f"ERROR: --cluster-soak=100000h: {EXPECTED_DURATION}, got '100000h'"),
    (["--cluster-soak="], f"ERROR: --cluster-soak=: {EXPECTED_DURATION}, got an empty value"),
    (["--cluster-soak=inf h"], f"ERROR: --cluster-soak=inf h: {EXPECTED_DURATION}, got 'inf h'"),
    (["--cluster-soak-rounds=1e23"],
     "ERROR: --cluster-soak-rounds=1e23: expected a whole number of rounds from 1 to "
     "1,000,000 like 48, got '1e23'"),
    (["--cluster-soak-rounds=100000000000000000000000"],
     "ERROR: --cluster-soak-rounds=100000000000000000000000: expected a whole number of "
     "rounds from 1 to 1,000,000, got 100000000000000000000000"),
    (["--cluster-soak-rounds=2.5"],
     "ERROR: --cluster-soak-rounds=2.5: expected a whole number of rounds from 1 to "
     "1,000,000 like 48, got '2.5'"),
    (["--cluster-soak-rounds=-3"],
     "ERROR: --cluster-soak-rounds=-3: expected a whole number of rounds from 1 to "
     "1,000,000 like 48, got '-3'"),
    (["--cluster-soak-rounds=1000001"],
     "ERROR: --cluster-soak-rounds=1000001: expected a whole number of rounds from 1 to "
     "1,000,000, got 1000001"),
    (["--cluster-soak-round=-1"],
     "ERROR: --cluster-soak-round=-1: expected a round number from 1 to 1,000,000 (a soak "
     "sets it for each of its rounds)"),
    (["--cluster-soak-round=0"],
     "ERROR: --cluster-soak-round=0: expected a round number from 1 to 1,000,000 (a soak "
     "sets it for each of its rounds)"),
    (["--cluster-soak-round=" + "9" * 300],
     "ERROR: --cluster-soak-round=" + "9" * 100 + "... (300 characters): expected a round "
     "number from 1 to 1,000,000 (a soak sets it for each of its rounds)"),
    (["--cluster-soak-resume="],
     "ERROR: --cluster-soak-resume=: expected the directory of a stopped soak, got an empty "
     "value"),
    (["--cluster-valid-for="], f"ERROR: --cluster-valid-for=: {EXPECTED_DURATION}, got an "
                               "empty value"),
    (["--cluster-valid-for=0"], f"ERROR: --cluster-valid-for=0: {EXPECTED_DURATION}, got '0'"),
    (["--cluster-valid-for=1 d"], f"ERROR: --cluster-valid-for=1 d: {EXPECTED_DURATION}, got "
                                  "'1 d' (unknown unit 'd'; known units: ms, s, min, h)"),
    (["--cluster-valid-for=9000h"], f"ERROR: --cluster-valid-for=9000h: {EXPECTED_DURATION}, "
                                    "got '9000h'"),
])
def test_an_empty_or_absurd_option_is_a_usage_error(pytester: pytest.Pytester,
                                                    args: list[str], says: str) -> None:
    (pytester.path / "trial.yaml").write_text(SPEC)
    result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert says in result.stderr.lines
    assert len(result.stderr.str()) < 1000
    assert not (pytester.path / "reports").exists()
    assert "passed" not in result.stdout.str()


@pytest.mark.parametrize("option", ["--cluster-sign-key", "--cluster-ssh-sign-key",
                                    "--cluster-baseline-key"])
@pytest.mark.parametrize("kind", ["device", "fifo", "huge"])
def test_a_key_that_is_no_key_file_is_refused_unread(pytester: pytest.Pytester, option: str,
                                                     kind: str) -> None:
    """/dev/zero, a FIFO nobody writes to, or a 2 MiB file as a key: refused from its
    type and size, never read to the end (before: /dev/zero ate the memory)."""
    import os
    (pytester.path / "trial.yaml").write_text(SPEC)
    if kind == "device":
        key = "/dev/zero"
    elif kind == "fifo":
        key = str(pytester.path / "key.fifo")
        os.mkfifo(key)
    else:
        key = str(pytester.path / "key.pem")
        Path(key).write_bytes(b"A" * (2 << 20))
    extra = ["--cluster-baseline=" + str(pytester.path)] if "baseline" in option else []
    result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                                f"{option}={key}", *extra)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    said = result.stderr.str()
    assert ("not a regular file" if kind != "huge" else "expected a key file of at most "
            "1048576 bytes") in said
    assert len(said) < 1000
    assert not (pytester.path / "reports").exists()


def test_verify_refuses_a_key_that_is_no_key_file(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    from pytest_cluster.cli import main
    assert main(["verify", str(tmp_path), "--key", "/dev/zero"]) == 2
    assert "/dev/zero: cannot read the public key: not a regular file" in capsys.readouterr().err


def test_a_huge_option_value_is_echoed_cut(pytester: pytest.Pytester) -> None:
    (pytester.path / "trial.yaml").write_text(SPEC)
    result = pytester.runpytest("--cluster=trial.yaml", "--cluster-soak-rounds=" + "9" * 5000)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert len(result.stderr.str()) < 1000
    result.stderr.fnmatch_lines(["ERROR: --cluster-soak-rounds=9999999999*: expected a whole "
                                 "number of rounds from 1 to 1,000,000, got 9999*"])


def test_an_sla_section_in_a_run_that_is_no_soak_is_listed_as_not_checked(
        pytester: pytest.Pytester) -> None:
    (pytester.path / "trial.yaml").write_text(
        SPEC + "sla: {uptime: 99%, price_per_node_hour: 2.5, credits: [{below: 99%, "
               "credit: 10%}]}\n")
    result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                                "--cluster-reports=reports", "-m", "sanity")
    result.stdout.fnmatch_lines([
        "not checked: sla: availability is measured over time, by a soak "
        "(--cluster-soak=DURATION or --cluster-soak-rounds=N); this run is none"])
    end = [json.loads(line) for line in (pytester.path / "reports" / "latest" /
                                         "results.jsonl").read_text().splitlines()][-1]
    assert end["type"] == "end" and end["not_checked"][-1] == {"clause": "sla", "why": (
        "availability is measured over time, by a soak (--cluster-soak=DURATION or "
        "--cluster-soak-rounds=N); this run is none")}
    assert "sla: availability is measured over time" in (
        pytester.path / "reports" / "latest" / "report.html").read_text()


@pytest.mark.parametrize(("marker", "says"), [
    ('{"max_rounds": 1e23}', "max_rounds: expected a whole number from 1 to 1,000,000, got "
                             "1e+23"),
    ('{"duration_s": -5}', "duration_s: expected seconds above 0 and at most a year, got -5"),
    ("[" * 100_000, "expected a soak's soak.json (a plain file of at most 64 KiB)"),
    ("[" * 5000, "cannot be read: maximum recursion depth exceeded"),
    ("[]", "expected a JSON object"),
])
def test_a_soak_to_resume_whose_soak_json_is_hostile_is_a_usage_error(
        pytester: pytest.Pytester, marker: str, says: str) -> None:
    (pytester.path / "trial.yaml").write_text(SPEC)
    (pytester.path / "old").mkdir()
    (pytester.path / "old" / "soak.json").write_text(marker)
    result = pytester.runpytest("--cluster=trial.yaml", "--cluster-soak-resume=old")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert len(result.stderr.str()) < 1000
    result.stderr.fnmatch_lines([f"ERROR: --cluster-soak-resume=old: old/soak.json*{says}*"])


@pytest.mark.parametrize(("value", "says"), [
    ("x" * 120_000, "ERROR: --cluster-node: 'xxxx*... (120000 characters)': 'xxx*... "
                    "(120000 characters)' is not a valid hostname*"),
    ("n[" + "1," * 60_000 + "x]", "ERROR: --cluster-node: 'n[1,1,*... (120004 characters)': "
                                  "bad range 'x' in hostlist 'n[1,1,*... (120004 characters)' "
                                  "(expected like 001-004)"),
    ("n1," + "y" * 50_000, "ERROR: --cluster-node: 'n1,yyy*... (50003 characters)': 'yyy*... "
                           "(50000 characters)' is not a valid hostname*"),
])
def test_a_huge_node_name_is_echoed_cut(pytester: pytest.Pytester, value: str,
                                        says: str) -> None:
    """Before: the whole 120,000-character hostlist was echoed (twice)."""
    (pytester.path / "trial.yaml").write_text(SPEC)
    result = pytester.runpytest("--cluster=trial.yaml", f"--cluster-node={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert len(result.stderr.str()) < 1000
    result.stderr.fnmatch_lines([says])


def test_a_huge_slurmd_nodename_is_echoed_cut(pytester: pytest.Pytester,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    (pytester.path / "trial.yaml").write_text(SPEC)
    monkeypatch.setenv("SLURMD_NODENAME", "y" * 100_000)
    result = pytester.runpytest("--cluster=trial.yaml", "--cluster-node=.")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert len(result.stderr.str()) < 1000
    result.stderr.fnmatch_lines(["ERROR: --cluster-node: this host (yyy*... (100000 "
                                 "characters), *) is not one of the spec's cluster.nodes"])


def test_more_nodes_than_one_run_checks_are_refused_naming_the_first_part(
        pytester: pytest.Pytester) -> None:
    """Issue 38: 16,384 simulated nodes took 40 s and 1.77 GB just to collect at the sanity
    level. A spec may list them; one run takes at most MAX_RUN_NODES (--cluster-node picks
    a part), refused before anything is collected."""
    import time

    from pytest_cluster.contract.narrow import MAX_RUN_NODES
    (pytester.path / "trial.yaml").write_text(SPEC.replace("nodes: [n1]",
                                                           "nodes: 'gpu-[00001-16384]'"))
    started = time.perf_counter()
    result = pytester.runpytest("--cluster=trial.yaml", "-m", "sanity")
    assert time.perf_counter() - started < 2
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert result.stderr.lines[0] == (
        f"ERROR: trial.yaml: cluster.nodes: 16,384 nodes in one run, more than the "
        f"{MAX_RUN_NODES:,} one run checks (collecting their cases takes time and memory in "
        f"proportion); test a larger cluster in parts (--cluster-node=gpu-[00001-0"
        f"{MAX_RUN_NODES}], then the next {MAX_RUN_NODES:,})")
    assert not (pytester.path / "reports").exists()
    too_many = pytester.runpytest("--cluster=trial.yaml", "--cluster-node=gpu-[00001-02000]")
    assert too_many.ret == pytest.ExitCode.USAGE_ERROR
    too_many.stderr.fnmatch_lines(["ERROR: --cluster-node: 2,000 nodes in one run, more than*"])
    part = pytester.runpytest("--cluster=trial.yaml", "-m", "sanity", "-p", "no:cacheprovider",
                              "--cluster-node=gpu-[00001-00002]")
    assert part.ret == pytest.ExitCode.OK

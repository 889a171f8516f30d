"""`pytest-cluster verify`'s exit codes on bundles a run sealed: --require-signature on a
signed run, an unsigned one, a wrong key and a changed file, without --key; and every exit
code listed in `verify --help`; Ctrl-C during verify. `pytest-cluster gate --drain --resume`
on a fake sinfo and scontrol: what it runs, what it says, and that its exit stays the
decision's."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_cluster.cli import VERIFY_EXIT_MEANING, VerifyExit, main
from tests.evidence.bundle.test_bundle import SIM_SPEC, ed25519_key


def sealed_run(pytester: pytest.Pytester, *options: str) -> Path:
    """The evidence directory of a simulated run, sealed (signed with `options`)."""
    (pytester.path / "trial.yaml").write_text(SIM_SPEC)
    result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider", *options)
    assert result.ret == pytest.ExitCode.OK
    return (pytester.path / "reports" / "latest").resolve()


def test_require_signature_passes_a_run_signed_by_the_key(
        pytester: pytest.Pytester, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    private, public, openssh = ed25519_key(tmp_path, "k")
    run_dir = sealed_run(pytester, f"--cluster-sign-key={private}")
    for key in (public, openssh):
        assert main(["verify", str(run_dir), "--key", str(key),
                     "--require-signature"]) == VerifyExit.OK
        assert capsys.readouterr().out.splitlines()[-1].startswith(
            "VERIFIED: FILES MATCH, SIGNED BY SHA256:")


def test_require_signature_fails_a_run_signed_by_another_key(
        pytester: pytest.Pytester, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    private, _, _ = ed25519_key(tmp_path, "signer")
    _, other, _ = ed25519_key(tmp_path, "other")
    run_dir = sealed_run(pytester, f"--cluster-sign-key={private}")
    assert main(["verify", str(run_dir), "--key", str(other),
                 "--require-signature"]) == VerifyExit.NOT_VERIFIED
    out = capsys.readouterr().out.splitlines()
    assert "not signed by this key" in out[-2]
    assert out[-1] == "FILES MATCH, SIGNATURE INVALID"


def test_require_signature_fails_an_unsigned_run_saying_so(
        pytester: pytest.Pytester, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, public, _ = ed25519_key(tmp_path, "k")
    run_dir = sealed_run(pytester)
    assert main(["verify", str(run_dir)]) == VerifyExit.OK  # nothing asked of a signature
    capsys.readouterr()
    assert main(["verify", str(run_dir), "--key", str(public),
                 "--require-signature"]) == VerifyExit.NOT_VERIFIED
    out = capsys.readouterr().out.splitlines()
    assert out[-2].startswith("signature: UNSIGNED - anyone could have rewritten")
    assert "expected a signature by SHA256:" in out[-2]
    assert out[-1] == "FILES MATCH, UNSIGNED"


def test_a_changed_file_is_the_changed_code_with_or_without_require_signature(
        pytester: pytest.Pytester, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    private, public, _ = ed25519_key(tmp_path, "k")
    run_dir = sealed_run(pytester, f"--cluster-sign-key={private}")
    verdict = run_dir / "verdict.json"
    verdict.write_bytes(verdict.read_bytes() + b" ")
    for extra in ([], ["--require-signature"]):
        assert main(["verify", str(run_dir), "--key", str(public),
                     *extra]) == VerifyExit.NOT_VERIFIED
        out = capsys.readouterr().out.splitlines()
        assert any(line.startswith("CHANGED: verdict.json: ") for line in out)
        assert out[-1].startswith("FILES CHANGED, SIGNED BY SHA256:")


def test_require_signature_without_key_is_a_usage_error(
        pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = sealed_run(pytester)  # unsigned: it would pass without the requirement
    capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        main(["verify", str(run_dir), "--require-signature"])
    assert exited.value.code == VerifyExit.ERROR
    captured = capsys.readouterr()
    assert captured.out == ""  # nothing was checked
    assert captured.err.splitlines()[-1] == (
        "pytest-cluster verify: error: --require-signature needs --key PUBKEY: the public "
        "key the manifest must be signed by")


def test_verify_help_lists_every_exit_code(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["verify", "--help"])
    assert exited.value.code == 0
    text = capsys.readouterr().out
    listed = {int(code): meaning for code, meaning in re.findall(
        r"^  (\d+)  (.+(?:\n     .+)*)", text.split("exit codes:\n", 1)[1], re.M)}
    assert set(listed) == {code.value for code in VerifyExit} == set(VERIFY_EXIT_MEANING)
    for code, meaning in listed.items():
        assert " ".join(meaning.split()) == VERIFY_EXIT_MEANING[VerifyExit(code)]


def test_the_docs_list_every_exit_code_of_verify() -> None:
    text = (Path(__file__).parents[1] / "docs" / "running.md").read_text(encoding="utf-8")
    listed = text.split("`verify`'s exit codes", 1)[1].split("\n\n", 2)[1]
    codes = [int(code) for code in re.findall(r"^- `(\d+)`: ", listed, re.M)]
    assert codes == [code.value for code in VerifyExit]


#: A verify that takes its time (a stand-in for hashing a large directory): it says it has
#: started, then sleeps; the real main() around it.
SLOW_VERIFY = """
import sys, time
from pytest_cluster import cli
def slow(*args, **kwargs):
    print("started", flush=True)
    time.sleep(60)
cli.verify = slow
sys.exit(cli.main(["verify", sys.argv[1]]))
"""


def test_ctrl_c_stops_verify_with_one_line_and_its_own_exit_code(tmp_path: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", SLOW_VERIFY, str(tmp_path)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])})
    assert child.stdout is not None and child.stdout.readline() == "started\n"
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=30)
    assert (child.returncode, out, err) == (
        VerifyExit.INTERRUPTED, "", "pytest-cluster verify: interrupted (Ctrl-C) before the "
                                    "check ended: nothing is verified\n")
    assert VerifyExit.INTERRUPTED.value == 130


@pytest.mark.parametrize("args", [["verify", ""], ["verify", " "], ["verify", ".", "--key", ""],
                                  ["gate", "", "--exit-status", "0"]])
def test_an_empty_path_is_a_usage_error_not_the_current_directory(
        args: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Before: `verify ''` (an unset $DIR) checked the current directory."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stopped:
        main(args)
    assert stopped.value.code == 2
    assert "expected a path, got an empty value (an unset variable?)" in capsys.readouterr().err


@pytest.mark.parametrize(("args", "says"), [
    (["gate", "d", "--exit-status", "256"],
     "argument --exit-status: expected an exit status from 0 to 255 (the shell's $?), "
     "got '256'"),
    (["gate", "d", "--exit-status", "-1"],
     "argument --exit-status: expected an exit status from 0 to 255 (the shell's $?), "
     "got '-1'"),
    (["gate", "d", "--exit-status", "\u0663"],
     "argument --exit-status: expected an exit status from 0 to 255 (the shell's $?), "
     "got '\u0663'"),
    (["gate", "d", "--exit-status", "0", "--since", "nan"],
     "argument --since: expected seconds since the epoch (date +%s), got 'nan'"),
    (["gate", "d", "--exit-status", "0", "--since", "-5"],
     "argument --since: expected seconds since the epoch (date +%s), got '-5'"),
    (["gate", "d"], "the following arguments are required: --exit-status"),
    ([], "the following arguments are required: command"),
])
def test_a_gate_asked_wrongly_is_a_usage_error_saying_what_was_expected(
        args: list[str], says: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(args)
    assert stopped.value.code == VerifyExit.ERROR
    assert capsys.readouterr().err.splitlines()[-1].endswith(f"error: {says}")


# -- pytest-cluster check: a contract and a disable file validated, nothing run ----------------

TWO_PROBLEMS = """\
cluster:
  name: x
  nodes: n[1-2]
  launcher: sim
sim:
  gpu_model: H100-SXM-80GB
  gpus_per_node: 2
gpus:
  count: many
  modle: H100-SXM-80GB
"""


def test_check_says_a_valid_spec_and_disable_file_are_valid_running_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from pytest_cluster.contract import load_spec
    from pytest_cluster.contract.promised import clause_count

    spec = tmp_path / "trial.yaml"
    spec.write_text(SIM_SPEC)
    off = tmp_path / "off.yaml"
    off.write_text("disabled:\n - {clause: gpus.xid, reason: noisy, until: 2099-12-31}\n"
                   " - {clause: gpus.pcie, reason: old, until: 2020-01-01}\n")
    loaded = load_spec(spec)
    assert main(["check", str(spec), "--disable", str(off)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"{spec}: valid: {clause_count(loaded)} clause(s) on {len(loaded.cluster.nodes)} "
        f"node(s) (cluster {loaded.cluster.name}, launcher sim)",
        f"{off}: valid: 2 entries; in force: gpus.xid until 2099-12-31; expired (ignored): "
        "gpus.pcie until 2020-01-01"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["off.yaml", "trial.yaml"]


def test_check_lists_every_problem_of_the_spec_at_its_line_and_exits_4(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "bad.yaml"
    spec.write_text(TWO_PROBLEMS)
    assert main(["check", str(spec)]) == 4
    out = capsys.readouterr().out
    assert out.startswith(f"{spec}: 2 problems in the spec:")
    assert f"{spec}:9: gpus.count: expected a count like 192, got 'many'" in out
    assert f"{spec}:10: gpus.modle: unknown key; did you mean 'model'?" in out


def test_check_names_a_disable_file_s_bad_date_at_its_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "trial.yaml"
    spec.write_text(SIM_SPEC)
    off = tmp_path / "off.yaml"
    off.write_text("disabled:\n  - clause: gpus.xid\n    reason: noisy\n"
                   "    until: 2026-13-01\n")
    assert main(["check", str(spec), "--disable", str(off)]) == 4
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"{spec}: valid: ")
    assert out[1].startswith(f"{off}:4: disabled[0].until: expected a date (2026-12-31")
    assert out[1].endswith("got '2026-13-01'")


def test_check_of_a_missing_huge_or_binary_file_is_4_in_a_few_bounded_lines(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    huge = tmp_path / "huge.yaml"
    huge.write_bytes(b"a: " + b"x" * (8 * 2**20))
    binary = tmp_path / "binary.yaml"
    binary.write_bytes(bytes(range(256)) * 64)
    for spec, said in ((tmp_path / "none.yaml", "no such file"),
                       (huge, "is larger than 4 MiB; is this really a spec?"),
                       (binary, "not UTF-8 text")):
        assert main(["check", str(spec), "--disable", str(binary)]) == 4
        out = capsys.readouterr().out.splitlines()
        assert out[0].startswith(f"{spec}: {said}")
        assert out[1].startswith(f"{binary}: ") and len(out) == 2
    # a spec of many problems: at most 20 said, the rest counted, each line bounded
    many = tmp_path / "many.yaml"
    many.write_text(TWO_PROBLEMS + "".join(f"  bogus{i}: {'y' * 5000}\n" for i in range(50)))
    assert main(["check", str(many)]) == 4
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == "  ... and 32 more" and len(out) == 22
    assert max(map(len, out)) <= 1002


def test_check_without_a_spec_is_argparse_s_usage_error(
        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["check", ""])
    assert stopped.value.code == 2
    assert "expected a path, got an empty value" in capsys.readouterr().err


#: A gate's run directory's verdict, by node: (verdict, reason).
Nodes = dict[str, tuple[str, str]]


@pytest.fixture
def fake_slurm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake sinfo and scontrol on PATH, each recording its arguments, one call a line
    (sinfo.calls, scontrol.calls); sinfo prints sinfo.out (write it), scontrol exits with
    scontrol.exit's number where that file is there, saying 'refused' on stderr. The
    gate's lines are kept (gate_run returns them)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in (("sinfo", f'cat {tmp_path}/sinfo.out\n'),
                       ("scontrol", f'[ -f {tmp_path}/scontrol.exit ] && {{ echo refused >&2; '
                                    f'exit "$(cat {tmp_path}/scontrol.exit)"; }}\nexit 0\n')):
        fake = bin_dir / name
        fake.write_text(f'#!/bin/sh\necho "$*" >>{tmp_path}/{name}.calls\n{body}')
        fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    from pytest_cluster import cli
    monkeypatch.setattr(cli, "_say", lambda text: _lines.extend(text.splitlines()))
    return tmp_path


def calls(fake_slurm: Path, name: str) -> list[str]:
    path = fake_slurm / f"{name}.calls"
    return path.read_text().splitlines() if path.exists() else []


def gate_run(fake_slurm: Path, nodes: Nodes, *options: str, simulated: bool = False,
             status: int | None = None) -> tuple[int, list[str]]:
    """`pytest-cluster gate RUN --exit-status N *options` on a verdict of `nodes`: (its
    exit, its lines); N is 0 where every node was accepted, else 1."""
    from pytest_cluster.evidence.verdict.nodes import ACCEPTED, outcome_of
    run = fake_slurm / "run"
    run.mkdir(exist_ok=True)
    verdict = next((v for v, _ in nodes.values() if v != ACCEPTED), ACCEPTED)
    (run / "verdict.json").write_text(json.dumps({
        "verdict": verdict, "outcome": outcome_of(verdict), "level": "sanity",
        "simulated": simulated, "cluster_checks_failed": [],
        "nodes": [{"node": n, "verdict": v, "outcome": outcome_of(v), "reason": r}
                  for n, (v, r) in nodes.items()]}))
    if status is None:
        status = 0 if verdict == ACCEPTED else 1
    _lines.clear()
    code = main(["gate", str(run), "--exit-status", str(status), *options])
    return code, _lines


#: The gate's lines, as said (cli._say) where `fake_slurm` is used.
_lines: list[str] = []


OURS = "pytest-cluster rejected: 1 clause(s) failed: storage[/scratch].capacity"
ACCEPT, REJECT = ("ACCEPTED", ""), ("REJECTED", "1 clause(s) failed: fabric.ports")


def test_gate_resume_resumes_a_node_drained_by_us_and_not_one_drained_by_an_admin(
        fake_slurm: Path) -> None:
    (fake_slurm / "sinfo.out").write_text(f"n1|drained|{OURS}\n"
                                     "n2|drained|maintenance | new DIMMs\n"
                                     "n3|idle|none\n")
    code, said = gate_run(fake_slurm, {"n1": ACCEPT, "n2": ACCEPT, "n3": ACCEPT}, "--resume")
    assert code == 0
    assert said == [
        "pytest-cluster PASS: 3 node(s) passed every check at level sanity: n[1-3]",
        "pytest-cluster resumed: scontrol update NodeName=n1 State=RESUME (it passed; its "
        f"drain was ours: {OURS})",
        "pytest-cluster not resumed n2: drained by someone else: maintenance | new DIMMs"]
    assert calls(fake_slurm, "sinfo") == ["--noheader --all --Node --nodes=n[1-3] "
                                     "--format=%N|%T|%E"]
    assert calls(fake_slurm, "scontrol") == ["update NodeName=n1 State=RESUME"]


def test_gate_without_resume_resumes_nothing(fake_slurm: Path) -> None:
    (fake_slurm / "sinfo.out").write_text(f"n1|drained|{OURS}\n")
    assert gate_run(fake_slurm, {"n1": ACCEPT}, "--drain")[0] == 0
    assert calls(fake_slurm, "sinfo") == calls(fake_slurm, "scontrol") == []


def test_a_fail_again_gets_the_new_reason_and_an_admins_drain_keeps_theirs(
        fake_slurm: Path) -> None:
    """One sinfo for every node, failed and accepted: n1 (drained by us, fails again) gets
    this run's reason, n2 (an admin's) keeps theirs, n3 (accepted, drained by us) is
    resumed beside them; the exit is FAIL's."""
    (fake_slurm / "sinfo.out").write_text(
        "n1|drained|PC-OLD pytest-cluster rejected: 1 clause(s) failed: host.memory\n"
        "n2|draining|maintenance\nn3|drained*|pytest-cluster unreachable: no answer\n")
    code, said = gate_run(fake_slurm, {"n1": REJECT, "n2": REJECT, "n3": ACCEPT},
                          "--drain", "--resume")
    assert code == 1
    assert said[2:] == [
        "pytest-cluster drained: scontrol update NodeName=n1 State=DRAIN "
        "'Reason=pytest-cluster rejected: 1 clause(s) failed: fabric.ports'",
        "pytest-cluster kept drained n2: drained by someone else: maintenance; its failure: "
        "pytest-cluster rejected: 1 clause(s) failed: fabric.ports",
        "pytest-cluster resumed: scontrol update NodeName=n3 State=RESUME (it passed; its "
        "drain was ours: pytest-cluster unreachable: no answer)"]
    assert len(calls(fake_slurm, "sinfo")) == 1
    assert calls(fake_slurm, "scontrol") == [
        "update NodeName=n1 State=DRAIN Reason=pytest-cluster rejected: 1 clause(s) failed: "
        "fabric.ports", "update NodeName=n3 State=RESUME"]


def test_an_error_resumes_and_drains_nothing_and_reads_no_state(fake_slurm: Path) -> None:
    (fake_slurm / "sinfo.out").write_text(f"n1|drained|{OURS}\nn2|drained|{OURS}\n")
    code, said = gate_run(fake_slurm, {"n1": ACCEPT, "n2": ("NOT CHECKED", "no answer")},
                          "--drain", "--resume", status=1)
    assert code == 2 and said[-1] == "pytest-cluster no node is drained for it"
    code, said = gate_run(fake_slurm, {"n1": ACCEPT, "n2": ACCEPT}, "--drain", "--resume",
                          status=4)  # pytest did not end well, though every node passed
    assert code == 2
    assert calls(fake_slurm, "sinfo") == calls(fake_slurm, "scontrol") == []


def test_a_simulated_run_resumes_and_drains_nothing(fake_slurm: Path) -> None:
    (fake_slurm / "sinfo.out").write_text(f"n1|drained|{OURS}\nn2|drained|{OURS}\n")
    assert gate_run(fake_slurm, {"n1": ACCEPT, "n2": ACCEPT}, "--drain", "--resume",
                    simulated=True)[0] == 0
    code, said = gate_run(fake_slurm, {"n1": ACCEPT, "n2": REJECT}, "--drain", "--resume",
                          simulated=True)
    assert code == 1
    assert said[-1] == ("pytest-cluster not drained: a simulated cluster's nodes are no "
                        "SLURM nodes")
    assert calls(fake_slurm, "sinfo") == calls(fake_slurm, "scontrol") == []


def test_a_state_not_read_resumes_nothing_and_drains_as_always_in_one_line(
        fake_slurm: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (fake_slurm / "bin" / "sinfo").write_text("#!/bin/sh\necho 'slurm_load_partitions: Unable to "
                                         "contact fake_slurm controller' >&2\nexit 1\n")
    code, said = gate_run(fake_slurm, {"n1": REJECT, "n2": ACCEPT}, "--drain", "--resume")
    assert code == 1
    assert said[1:] == [
        "pytest-cluster could not read the nodes' state in SLURM: sinfo: exit 1: "
        "slurm_load_partitions: Unable to contact fake_slurm controller; no node is resumed, and "
        "the failed nodes are drained whatever their drain reason",
        "pytest-cluster drained: scontrol update NodeName=n1 State=DRAIN "
        "'Reason=pytest-cluster rejected: 1 clause(s) failed: fabric.ports'"]
    (fake_slurm / "bin" / "sinfo").unlink()
    (fake_slurm / "scontrol.calls").unlink()
    monkeypatch.setenv("PATH", str(fake_slurm / "bin"))  # no sinfo (this machine's neither)
    code, said = gate_run(fake_slurm, {"n2": ACCEPT}, "--resume")
    assert code == 0
    assert said[1:] == ["pytest-cluster could not read the nodes' state in SLURM: sinfo: "
                        "cannot be run: No such file or directory; no node is resumed"]
    assert calls(fake_slurm, "scontrol") == []


def test_a_sinfo_that_hangs_or_floods_is_stopped_and_said(
        fake_slurm: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_cluster import cli
    monkeypatch.setattr(cli, "SLURM_TIMEOUT_S", 1)
    (fake_slurm / "bin" / "sinfo").write_text("#!/bin/sh\nexec sleep 60\n")
    code, said = gate_run(fake_slurm, {"n1": ACCEPT}, "--resume")
    assert (code, said[1:]) == (0, ["pytest-cluster could not read the nodes' state in "
                                    "SLURM: sinfo: no answer within 1 s; no node is resumed"])
    monkeypatch.setattr(cli, "MAX_STATE_BYTES", 1000)
    (fake_slurm / "bin" / "sinfo").write_text("#!/bin/sh\nexec yes n1\\|drained\\|x\n")
    code, said = gate_run(fake_slurm, {"n1": ACCEPT}, "--resume")
    assert (code, said[1:]) == (0, ["pytest-cluster could not read the nodes' state in "
                                    "SLURM: sinfo: printed more than 1000 bytes; no node is "
                                    "resumed"])
    assert calls(fake_slurm, "scontrol") == []


def test_scontrol_refusing_is_one_line_and_the_exit_stays_the_decisions(fake_slurm: Path) -> None:
    (fake_slurm / "sinfo.out").write_text(f"n1|drained|{OURS}\nn2|idle|none\n")
    (fake_slurm / "scontrol.exit").write_text("1")
    code, said = gate_run(fake_slurm, {"n1": ACCEPT, "n2": REJECT}, "--drain", "--resume")
    assert code == 1
    assert said[1:] == [
        "pytest-cluster drain failed (exit 1): scontrol update NodeName=n2 State=DRAIN "
        "'Reason=pytest-cluster rejected: 1 clause(s) failed: fabric.ports': refused",
        "pytest-cluster resume failed (exit 1): scontrol update NodeName=n1 State=RESUME: "
        "refused"]

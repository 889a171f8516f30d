"""`pytest-cluster verify`'s exit codes on bundles a run sealed: --require-signature on a
signed run, an unsigned one, a wrong key and a changed file, without --key; and every exit
code listed in `verify --help`; Ctrl-C during verify."""

from __future__ import annotations

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

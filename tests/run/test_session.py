"""The controller's side of a run (pytest_cluster/run/session.py): results.jsonl's lines in
order (the run line, a result per case, the end), the sinks' hooks, an sla: section that
a run which is no soak does not check; and whatever fails once the checks have run (a
report that cannot be written, a sink's hook that raises), the evidence written so far is
sealed, signed when asked, with the failure recorded in the manifest and said on the
terminal: never an unsealed run directory (issue 38, item 4)."""

from __future__ import annotations

import errno
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_cluster.cli import main
from pytest_cluster.evidence.bundle.keys import PublicKey
from pytest_cluster.evidence.bundle.verify import verify
from pytest_cluster.report.terminal import NEEDS_A_SOAK
from tests.conftest import planned
from tests.evidence.bundle.test_bundle import ed25519_key

SPEC = """\
cluster: {name: late, nodes: "n[1-2]", launcher: sim}
host:
  cpu_cores: ">= 1"
sim:
  gpus_per_node: 8
"""


def _run_dir(pytester: pytest.Pytester) -> Path:
    return (pytester.path / "reports" / "latest").resolve()


def _sealed_with(run_dir: Path, public: Path | None, says: str) -> dict[str, Any]:
    """The run's manifest verifies (with the key, when given) and names the failure;
    results.jsonl (with its end line) and verdict.json are there. Its predicate."""
    checked = verify(run_dir, PublicKey.load(public) if public is not None else None)
    assert checked.ok, checked.lines()
    assert checked.verified == (public is not None)
    assert any(says in why for why in checked.predicate["failures"]), checked.predicate
    lines = (run_dir / "results.jsonl").read_text().splitlines()
    assert json.loads(lines[-1])["type"] == "end"
    assert json.loads((run_dir / "verdict.json").read_text())["cluster"] == "late"
    return checked.predicate


def test_report_html_that_cannot_be_written_leaves_the_run_sealed_and_signed(
        pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    import pytest_html.basereport

    def full_disk(self: Any, rendered: str) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", str(self._report_path))

    monkeypatch.setattr(pytest_html.basereport.BaseReport, "_write_report", full_disk)
    private, public, _ = ed25519_key(tmp_path, "k")
    (pytester.path / "trial.yaml").write_text(SPEC)
    result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                                "-m", "sanity", f"--cluster-sign-key={private}")
    assert result.ret == pytest.ExitCode.INTERNAL_ERROR  # the evidence is incomplete
    result.stdout.fnmatch_lines([
        "*manifest.intoto.json sha256 *, signed by *",
        "EVIDENCE INCOMPLETE (recorded in the manifest): writing the reports at the run's "
        "end (report.html, junit.xml): OSError: [[]Errno 28[]] No space left on device: "
        "*report.html'"])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    run_dir = _run_dir(pytester)
    _sealed_with(run_dir, public, "No space left on device")
    assert not (run_dir / "report.html").exists()
    assert (run_dir / "junit.xml").is_file()
    capsys.readouterr()
    assert main(["verify", str(run_dir)]) == 0
    assert ("run: EVIDENCE INCOMPLETE: writing the reports at the run's end (report.html, "
            "junit.xml): OSError: [Errno 28] No space left on device") in capsys.readouterr().out


class RaisingSink:
    """A sink of the run's evidence (hookspecs.py) that fails at the run's end."""

    @pytest.hookimpl
    def pytest_cluster_run_ended(self, config: pytest.Config, end: dict[str, Any]) -> None:
        raise RuntimeError("the sink's database is gone")


def test_a_sink_that_raises_at_the_end_costs_no_evidence(pytester: pytest.Pytester) -> None:
    """Before: verdict.json was never written and the run's directory was left unsealed."""
    (pytester.path / "trial.yaml").write_text(SPEC)
    result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                                "-m", "sanity", plugins=[RaisingSink()])
    assert result.ret == pytest.ExitCode.INTERNAL_ERROR
    result.stdout.fnmatch_lines([
        "EVIDENCE INCOMPLETE (recorded in the manifest): a pytest_cluster_run_ended hook: "
        "RuntimeError: the sink's database is gone"])
    run_dir = _run_dir(pytester)
    _sealed_with(run_dir, None, "the sink's database is gone")
    assert (run_dir / "report.html").is_file() and (run_dir / "junit.xml").is_file()


def test_a_run_that_fails_nothing_late_records_no_failures(pytester: pytest.Pytester) -> None:
    (pytester.path / "trial.yaml").write_text(SPEC)
    result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                                "-m", "sanity")
    assert result.ret == pytest.ExitCode.OK
    assert "EVIDENCE INCOMPLETE" not in result.stdout.str()
    assert "failures" not in verify(_run_dir(pytester)).predicate


def test_results_jsonl_is_the_run_line_a_result_per_case_then_the_end(
        pytester: pytest.Pytester) -> None:
    every = planned(pytester, SPEC, "-m", "sanity")
    (pytester.path / "trial.yaml").write_text(SPEC)
    pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider", "-m", "sanity")
    run_dir = _run_dir(pytester)
    records = [json.loads(line) for line in (run_dir / "results.jsonl").read_text()
               .splitlines()]
    first, *results, end = records
    assert (first["type"], first["cluster"], first["nodes"], first["launcher"],
            first["simulated"]) == ("run", "late", ["n1", "n2"], "sim", True)
    assert Path(first["run_dir"]).resolve() == run_dir
    assert {r["type"] for r in results} == {"result"}
    assert sorted(r["case"].rpartition("::")[2] for r in results) == sorted(every)
    assert end["type"] == "end" and end["checks_ran"] == len(every)


class Sink:
    """A sink of the run's evidence (hookspecs.py) that keeps what it is told."""

    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []
        self.verdicts: list[dict[str, Any]] = []
        self.ends: list[dict[str, Any]] = []

    @pytest.hookimpl
    def pytest_cluster_result_line(self, record: dict[str, Any]) -> None:
        self.lines.append(dict(record))

    @pytest.hookimpl
    def pytest_cluster_node_verdict(self, verdict: dict[str, Any]) -> None:
        self.verdicts.append(verdict)

    @pytest.hookimpl
    def pytest_cluster_run_ended(self, end: dict[str, Any]) -> None:
        self.ends.append(dict(end))


def test_a_sink_is_told_every_line_of_results_jsonl_each_nodes_verdict_and_the_end(
        pytester: pytest.Pytester) -> None:
    sink = Sink()
    (pytester.path / "trial.yaml").write_text(SPEC)
    pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider", "-m", "sanity",
                       plugins=[sink])
    written = [json.loads(line) for line in (_run_dir(pytester) / "results.jsonl")
               .read_text().splitlines()]
    assert json.loads(json.dumps(sink.lines)) == written
    assert [v["node"] for v in sink.verdicts] == ["n1", "n2"]
    assert json.loads(json.dumps(sink.ends)) == [written[-1]]


class RaisingVerdictSink:
    """A sink that fails on each node's verdict."""

    @pytest.hookimpl
    def pytest_cluster_node_verdict(self, verdict: dict[str, Any]) -> None:
        raise RuntimeError("the sink's queue is full")


def test_a_verdict_sink_that_raises_costs_no_evidence(pytester: pytest.Pytester) -> None:
    (pytester.path / "trial.yaml").write_text(SPEC)
    result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                                "-m", "sanity", plugins=[RaisingVerdictSink()])
    assert result.ret == pytest.ExitCode.INTERNAL_ERROR
    result.stdout.fnmatch_lines([
        "EVIDENCE INCOMPLETE (recorded in the manifest): a pytest_cluster_node_verdict hook: "
        "RuntimeError: the sink's queue is full"])
    _sealed_with(_run_dir(pytester), None, "the sink's queue is full")


def test_an_sla_in_a_run_that_is_no_soak_is_not_checked_saying_why(
        pytester: pytest.Pytester) -> None:
    (pytester.path / "trial.yaml").write_text(
        SPEC + "sla:\n  uptime: 99.5%\n  price_per_node_hour: 2.49\n"
        "  credits: [{below: 99.5%, credit: 10%}]\n")
    pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider", "-m", "sanity")
    end = json.loads((_run_dir(pytester) / "results.jsonl").read_text().splitlines()[-1])
    assert {"clause": "sla", "why": NEEDS_A_SOAK} in end["not_checked"]

"""pytest-cluster's own hooks (hookspecs.py): an outside plugin (tests/sink_plugin.py)
receives every result line, each node's verdict, each soak round, the end record and the
sealed evidence, without touching our code."""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_cluster import hookspecs
from tests import sink_plugin

SPEC = """\
cluster: {name: hooked, nodes: "n[1-3]", launcher: sim}
gpus:
  count: 8
  ecc_uncorrected: 0
sim:
  gpus_per_node: 8
  faults:
    - {node: n2, gpu: 1, ecc_uncorrected: 3}
"""


def _calls(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
         *args: str) -> tuple[pytest.RunResult, list[dict[str, Any]]]:
    sink = pytester.path / "sink.jsonl"
    monkeypatch.setenv("PYTEST_CLUSTER_SINK", str(sink))
    (pytester.path / "trial.yaml").write_text(SPEC, encoding="utf-8")
    result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                                "--cluster-reports=reports", *args, plugins=[sink_plugin])
    return result, _calls(sink) if sink.exists() else []


def test_a_sink_gets_every_line_verdict_end_and_the_seal(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    result, calls = _run(pytester, monkeypatch)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    order = list(dict.fromkeys(c["hook"] for c in calls))
    assert order == ["result_line", "node_verdict", "run_ended", "evidence_sealed"]
    run_dir = Path(calls[-1]["run_dir"])
    assert run_dir.is_absolute() and calls[-1]["exists"]
    assert calls[-1]["manifest"] == str(run_dir / "manifest.intoto.json")
    written = [json.loads(line) for line in
               (run_dir / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [c["record"] for c in calls if c["hook"] == "result_line"] == written
    assert written[0]["type"] == "run" and written[-1]["type"] == "end"
    verdicts = {c["verdict"]["node"]: c["verdict"]["verdict"]
                for c in calls if c["hook"] == "node_verdict"}
    on_file = json.loads((run_dir / "verdict.json").read_text(encoding="utf-8"))
    assert verdicts == {v["node"]: v["verdict"] for v in on_file["nodes"]}
    assert verdicts == {"n1": "ACCEPTED", "n2": "REJECTED", "n3": "ACCEPTED"}
    ended = [c for c in calls if c["hook"] == "run_ended"]
    assert len(ended) == 1 and ended[0]["end"] == written[-1]
    assert ended[0]["cluster"] == "trial.yaml"


def test_without_reports_a_sink_still_gets_the_lines(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    result, calls = _run(pytester, monkeypatch, "--cluster-reports=")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    hooks = [c["hook"] for c in calls]
    assert "evidence_sealed" not in hooks and hooks.count("run_ended") == 1
    lines = [c["record"] for c in calls if c["hook"] == "result_line"]
    assert lines[0]["type"] == "run" and lines[-1]["type"] == "end"
    assert sum(r["type"] == "result" for r in lines) == lines[-1]["checks_ran"]
    assert not (pytester.path / "reports").exists()


@pytest.mark.slow
def test_a_sink_gets_each_soak_round(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    result, calls = _run(pytester, monkeypatch, "--cluster-soak-rounds=2", "-m", "sanity")
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()[-2000:]
    rounds = [c["record"] for c in calls if c["hook"] == "soak_round"]
    assert [r["round"] for r in rounds] == [1, 2]
    assert all(r["nodes"].get("failed") == ["n2"] for r in rounds), rounds
    lines = [c["record"] for c in calls if c["hook"] == "result_line"]
    assert [r for r in lines if r["type"] == "round"] == rounds
    assert calls[-1]["hook"] == "evidence_sealed"


SECTION_CONFTEST = """
from pytest_cluster.run import html_hooks

def _ours(run):
    return f'<div id="ours">our section: {run.spec.cluster.name}</div>'

def pytest_configure(config):
    saved = html_hooks.SECTIONS
    html_hooks.SECTIONS = (*saved, _ours)
    config.add_cleanup(lambda: setattr(html_hooks, "SECTIONS", saved))
"""


def test_a_report_section_is_a_line_in_the_registry(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """run/html_hooks.py's SECTIONS, in order: the soak's (none here), the scorecard, the
    baseline, the charts, the evidence, then one added by a conftest."""
    pytester.makeconftest(SECTION_CONFTEST)
    _run(pytester, monkeypatch)
    report = next((pytester.path / "reports").glob("*-hooked/report.html"))
    text = report.read_text(encoding="utf-8")
    assert 'id="ours">our section: hooked</div>' in text
    assert text.index("our section") > text.index("scorecard")


def test_the_docs_name_every_hook_we_declare() -> None:
    """docs/development.md's list of hooks is hookspecs.py's, none left out."""
    declared = [name for name, _ in inspect.getmembers(hookspecs, inspect.isfunction)
                if name.startswith("pytest_cluster_")]
    docs = (Path(__file__).resolve().parents[1] / "docs" / "development.md").read_text()
    assert len(declared) >= 6
    assert [name for name in declared if f"`{name}`" not in docs] == []

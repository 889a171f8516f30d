"""probes/gpu_perf/__main__.py: the one document the probe prints, with or without torch."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest

from pytest_cluster.probes.gpu_perf import __main__ as probe
from pytest_cluster.probes.gpu_perf.options import parse_options
from tests.probes.gpu_perf.fake import fake_torch


def test_without_torch_it_says_so_and_measures_nothing(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)
    monkeypatch.setattr(probe, "run", lambda opts: pytest.fail("measured without torch"))
    assert probe.main([]) == 0
    document = json.loads(capsys.readouterr().out)
    assert (document["probe"], document["schema"]) == ("gpu_perf", 1)
    assert document["data"] == {
        "error": f"torch is not installed for {sys.executable}: import of torch halted; None "
                 "in sys.modules"}


def test_with_torch_it_prints_what_the_run_measured(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "torch", fake_torch())
    asked: list[Any] = []

    def run(opts: Any) -> dict[str, Any]:
        asked.append(opts)
        return {"count": 0, "gpus": []}

    monkeypatch.setattr(probe, "run", run)
    assert probe.main(["--dtypes", "fp16", "--skip", "p2p"]) == 0
    assert asked == [parse_options(["--dtypes", "fp16", "--skip", "p2p"])]
    assert json.loads(capsys.readouterr().out) == {
        "probe": "gpu_perf", "schema": 1, "data": {"count": 0, "gpus": []}}


def test_an_unknown_part_to_skip_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        probe.main(["--skip", "everything"])
    assert stopped.value.code == 2
    assert "invalid choice: 'everything'" in capsys.readouterr().err

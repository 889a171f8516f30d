"""The nccl-tests probe's own parts: its runs and command lines, the JSON file it keeps
without the environment, a binary that knows -J; and, as shipped, what it cannot measure
said (the binary run end to end: tests/measure/network/test_nccl_tests.py)."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_cluster.probes import nccl_tests as probe
from tests import shipped_probe


def test_a_json_file_is_kept_without_its_environment_and_its_bare_nans_quoted(
        tmp_path: Path) -> None:
    path = tmp_path / "run0.json"
    path.write_text('{"env": {"AWS_SECRET": "x"}, "results": [{"busbw": nan, '
                    '"algbw": -inf, "time": 1.5}]}')
    kept = probe.kept_json(str(path))
    assert kept is not None
    assert json.loads(kept) == {"results": [{"busbw": "nan", "algbw": "-inf", "time": 1.5}]}


def test_a_json_file_that_is_missing_not_a_map_not_json_or_too_big_is_left_out(
        tmp_path: Path) -> None:
    path = tmp_path / "run0.json"
    assert probe.kept_json(str(path)) is None
    for text in ("[1, 2]", "{oops", "{}" + " " * probe.MAX_JSON):
        path.write_text(text)
        assert probe.kept_json(str(path)) is None, text[:10]


def test_a_binary_writes_json_when_its_help_names_the_output_file(tmp_path: Path) -> None:
    binary = tmp_path / "all_reduce_perf"
    binary.write_text("#!/bin/sh\necho '[-J,--output_file <file> write output to filepath]'\n")
    binary.chmod(0o755)
    assert probe.writes_json(str(binary)) is True
    binary.write_text("#!/bin/sh\necho '[-c,--check <check iteration count>]'\n")
    assert probe.writes_json(str(binary)) is False
    assert probe.writes_json(str(tmp_path / "absent")) is False


def test_the_payloads_off_the_doubling_grid_run_alone_in_order() -> None:
    assert probe.runs([8, 1 << 20, 24, 16, 40]) == [(8, 1 << 20), (24, 24), (40, 40)]
    assert probe.runs([4096]) == [(4096, 4096)]


def test_as_shipped_a_missing_binary_is_said_and_no_number_made(tmp_path: Path) -> None:
    data = shipped_probe.answer("nccl_tests", shipped_probe.printed(
        "nccl_tests", "--dir", str(tmp_path), "--binary", "all_reduce_perf", "--sizes", "8"))
    assert data == {"error": f"no executable {tmp_path}/all_reduce_perf on this node (build "
                             "nccl-tests there, `make -C nccl-tests`, or set "
                             "interconnect.nccl_tests)"}
    binary = tmp_path / "all_reduce_perf"
    binary.write_text("#!/bin/sh\nexit 0\n")
    binary.chmod(0o755)
    assert probe.measure({"--dir": str(tmp_path), "--binary": "all_reduce_perf",
                          "--sizes": ""}) == {"error": "no payload to run"}

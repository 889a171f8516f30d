"""probes/gpu_perf/options.py: the probe's options."""

from __future__ import annotations

import pytest

from pytest_cluster.probes.gpu_perf import PARTS, parse_options


def test_gpu_perf_options() -> None:
    assert parse_options([]) == {
        "dtypes": ["bf16"], "shape": [8192, 8192, 8192], "warmup": 50, "warmup_time": 1.0,
        "iterations": 100, "load_time": 10.0, "copy_bytes": 2 * 2**30,
        "xfer_bytes": 256 * 2**20, "skip": [], "sdc": False}
    opts = parse_options(["--dtypes", "", "--skip", "p2p", "--skip", "h2d", "--skip", "p2p"])
    assert opts["dtypes"] == []
    assert opts["skip"] == ["h2d", "p2p"]
    assert parse_options(["--shape", "4096"])["shape"] == [4096, 4096, 4096]
    assert parse_options(["--shape", "4096,8192,1024"])["shape"] == [4096, 8192, 1024]
    with pytest.raises(SystemExit):
        parse_options(["--shape", "1,2"])


@pytest.mark.parametrize("argv", [["--shape", "0,8,8"], ["--shape", "8,8,8,8"],
                                  ["--iterations", "many"], ["--load-time", "1e"],
                                  ["--skip", "matmul"]])
def test_an_option_it_cannot_use_is_refused_with_usage(
        argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        parse_options(argv)
    assert stopped.value.code == 2
    error = capsys.readouterr().err
    assert error.startswith("usage: ") and f"{argv[0]}" in error


def test_every_part_can_be_skipped() -> None:
    argv = [arg for part in PARTS for arg in ("--skip", part)]
    assert parse_options(argv)["skip"] == sorted(PARTS)

"""A node's part of a job (job_node) as it is shipped, and its own pieces: the environment a
job may set, a rank's progress file read within bounds, a silence past the stall timeout."""

from __future__ import annotations

import argparse
import base64
import json
import os
import socket
import time
from pathlib import Path

import pytest

from pytest_cluster.probes import job_node
from tests.shipped_probe import run_probe

#: A rank program: what a rank was told, as its last JSON line, after a line of noise.
RANK = ("import json, os\nprint('noise')\nprint(json.dumps({k: os.environ[k] for k in "
        "('RANK', 'LOCAL_RANK', 'WORLD_SIZE', 'GROUP_RANK', 'NCCL_IB_DISABLE')}))\n")


def test_a_nodes_ranks_run_with_the_distributed_environment_and_report_their_last_json(
        ) -> None:
    program = base64.b64encode(RANK.encode()).decode()
    data = run_probe("job_node", "--node-rank", "1", "--nnodes", "2", "--ranks-per-node", "2",
                     "--program", program, "--env", "NCCL_IB_DISABLE=1")
    assert data["killed_because"] == ""
    assert [(r["rank"], r["local_rank"], r["exit_code"], r["data"]) for r in data["ranks"]] == [
        (rank, rank - 2, 0, {"RANK": str(rank), "LOCAL_RANK": str(rank - 2),
                             "WORLD_SIZE": "4", "GROUP_RANK": "1", "NCCL_IB_DISABLE": "1"})
        for rank in (2, 3)]


def test_a_failing_rank_is_named_with_its_exit_code_and_the_end_of_its_stderr() -> None:
    program = base64.b64encode(b"import sys\nsys.exit('rank gave up')\n").decode()
    data = run_probe("job_node", "--program", program)
    (rank,) = data["ranks"]
    assert (rank["exit_code"], rank["data"]) == (1, None)
    assert rank["stderr_tail"].strip() == "rank gave up"


def test_whereami_names_this_host() -> None:
    data = run_probe("job_node", "--whereami")
    assert data["hostname"] == socket.gethostname()
    assert len(data["addresses"]) == len(set(data["addresses"]))


def test_a_job_sets_only_the_network_names_with_plain_values() -> None:
    assert job_node.job_env("NCCL_IB_HCA==mlx5_3:1") == ("NCCL_IB_HCA", "=mlx5_3:1")
    assert job_node.job_env("GLOO_SOCKET_IFNAME=ib0") == ("GLOO_SOCKET_IFNAME", "ib0")
    for bad in ("LD_PRELOAD=/tmp/x.so", "NCCL_IB_HCA=", "GLOO_SOCKET_IFNAME=eth0; reboot",
                "NCCL_IB_HCA=" + "a" * 129):
        with pytest.raises(argparse.ArgumentTypeError, match="not NAME=VALUE with NAME one of"):
            job_node.job_env(bad)


def test_a_ranks_file_is_read_only_as_a_bounded_json_object(tmp_path: Path) -> None:
    path = tmp_path / "rank0.json"
    assert job_node.read_json(str(path)) is None  # not there
    for text in ("[1, 2]", "{oops", " " * job_node.MAX_PROGRESS_BYTES + "{}"):
        path.write_text(text)
        assert job_node.read_json(str(path)) is None, text[:10]
    path.write_text(json.dumps({"step": 3}))
    assert job_node.read_json(str(path)) == {"step": 3}


def test_a_ranks_progress_says_how_long_before_its_end_it_entered_its_phase_and_beat(
        tmp_path: Path) -> None:
    path = tmp_path / "rank1.json"
    path.write_text(json.dumps({"rank": 1, "step": 7, "phase": "backward", "since": 100.0,
                                "beat": 104.5}))
    assert job_node.read_progress(str(path), 110.25) == {
        "rank": 1, "step": 7, "phase": "backward", "since": 100.0, "beat": 104.5,
        "phase_s": 10.25, "silent_s": 5.75}
    job_node.start_progress(str(path), 4)
    started = job_node.read_json(str(path))
    assert started is not None
    assert (started["rank"], started["step"], started["phase"]) == (4, -1, "start")
    assert started["since"] == started["beat"]
    assert job_node.read_progress(str(tmp_path / "absent"), None) is None


def test_a_rank_is_stalled_once_its_file_is_silent_past_the_timeout(tmp_path: Path) -> None:
    path = tmp_path / "rank0.json"
    job_node.start_progress(str(path), 0)
    long_ago = time.time() - 3600
    os.utime(path, (long_ago, long_ago))
    silent = job_node.stalled(str(path), 60.0)
    assert silent is not None and silent >= 3600
    assert job_node.stalled(str(path), 0.0) is None  # no stall timeout: never stalled
    assert job_node.stalled(str(path), 7200.0) is None
    assert job_node.silence(str(tmp_path / "absent")) is None  # no progress asked for

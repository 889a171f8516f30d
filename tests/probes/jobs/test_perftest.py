"""The perftest job program as it is shipped: a command line not of a perftest tool refused,
and a tool this node lacks said as not found, by the server and by a client; never a
bandwidth (the tool run end to end: tests/contract/sections/test_fabric.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_cluster.probes.jobs import job_source, perftest


def rank_line(rank: int, world: int, argv: object, path: Path) -> tuple[int, dict[str, Any]]:
    """A rank run as job_node runs it, PATH only `path`: its exit code and its JSON line."""
    done = subprocess.run(
        [sys.executable, "-I", "-", "--argv", json.dumps(argv), "--seconds", "1"],
        input=job_source("perftest"), capture_output=True, text=True, timeout=60,
        check=False, env={"PATH": str(path), "RANK": str(rank), "WORLD_SIZE": str(world),
                          "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29600",
                          "PYTEST_CLUSTER_INIT_TIMEOUT": "1"})
    line: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return done.returncode, line


@pytest.mark.parametrize("argv", [[], ["rm", "-rf", "/"], "ib_write_bw", ["ib_write_bw", 3]])
def test_a_command_line_not_of_a_perftest_tool_is_refused(tmp_path: Path, argv: object) -> None:
    code, line = rank_line(1, 2, argv, tmp_path)
    assert code == 2
    assert line == {"rank": 1, "exit_code": "bad_argv",
                    "stderr_tail": f"not a perftest command line: {argv!r}"}


def test_a_tool_this_node_lacks_is_not_found_by_the_server_and_the_client(
        tmp_path: Path) -> None:
    assert not (tmp_path / perftest.TOOLS[0]).exists()
    code, server = rank_line(0, 2, ["ib_write_bw", "-d", "mlx5_0"], tmp_path)
    assert code == 0
    assert (server["role"], server["clients"], server["exit_code"]) == ("server", 1, "not_found")
    assert server["argv"] == ["ib_write_bw", "-d", "mlx5_0", "-p", "29601"]
    assert set(server) == {"rank", "role", "tool", "clients", "argv", "exit_code", "stdout",
                           "stderr_tail"}  # no figure
    code, client = rank_line(1, 2, ["ib_write_bw"], tmp_path)
    assert (code, client["role"], client["exit_code"]) == (0, "client", "not_found")
    assert client["argv"] == ["ib_write_bw", "-p", "29601", "127.0.0.1"]
    assert set(client) == {"rank", "role", "tool", "argv", "exit_code", "stdout",
                           "stderr_tail"}

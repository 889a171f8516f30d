"""Real components (network namespaces with sshd, SLURM) for tests/probes/test_storage.py:
the same checks on real parts; its unit tests stay there."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from pytest_cluster.contract import parse_spec
from pytest_cluster.contract.model import SshSpec
from pytest_cluster.launchers.result import ProbeResult
from pytest_cluster.launchers.ssh import SshLauncher
from pytest_cluster.probes import ProbeCall
from tests.netns_cluster import NetnsCluster
from tests.probes.test_storage import MiB, netns_spec, open_file_size, ours, ssh_clients
from tests.test_plugin import jsonl


@pytest.mark.realcomponents
def test_over_ssh_a_probe_killed_at_its_timeout_leaves_nothing(pytester: pytest.Pytester,
                                                               netns: NetnsCluster) -> None:
    fs = pytester.mkdir("fs")
    (pytester.path / "trial.yaml").write_text(netns_spec(netns, fs))
    result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                                "-k", "test_storage")
    result.assert_outcomes(failed=4)
    records = [r for r in jsonl(pytester) if r.get("type") == "result"]
    assert {r["error_kind"] for r in records} == {"timeout"}, records
    assert ours(fs) == []
    assert netns.python_processes("node1") == netns.python_processes("node2") == []


@pytest.mark.realcomponents
def test_over_ssh_a_dropped_connection_leaves_nothing(netns: NetnsCluster,
                                                      tmp_path: Path) -> None:
    """The ssh client dies mid-write (Ctrl-C, a cut network): the node runner sees its
    stdin end and stops the probe."""
    fs = tmp_path / "fs"
    fs.mkdir()
    spec = parse_spec(netns_spec(netns, fs).replace("probe_timeout: 3 s",
                                                    "probe_timeout: 5 min"), "t.yaml")
    ssh = SshLauncher(spec.cluster, SshSpec(config=str(netns.ssh_config),
                                            connect_timeout_s=3))
    call = ProbeCall("storage", ("--path", str(fs), "--io-size", str(8 * 2**30),
                                 "--skip", "metadata"))
    results: dict[str, ProbeResult] = {}
    try:
        worker = threading.Thread(target=lambda: results.update(ssh.run(call, ["node2"], 300)))
        worker.start()
        deadline = time.monotonic() + 60
        probe_pid = None
        while probe_pid is None and time.monotonic() < deadline:
            for pid in netns.pids("node2"):
                try:
                    if open_file_size(pid, fs) >= 32 * MiB:
                        probe_pid = pid
                except OSError:
                    continue
            time.sleep(0.05)
        assert probe_pid is not None, "the probe never wrote 32 MiB"
        for pid in ssh_clients():
            os.kill(pid, signal.SIGKILL)
        worker.join(60)
        assert not worker.is_alive()
    finally:
        ssh.close()
    assert results["node2"].ok is False
    deadline = time.monotonic() + 20
    while netns.python_processes("node2") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert netns.python_processes("node2") == []
    assert ours(fs) == []


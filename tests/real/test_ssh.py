"""Real components (network namespaces with sshd, SLURM) for tests/launchers/test_ssh.py:
the same checks on real parts; its unit tests stay there."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from pytest_cluster.cli import main as cli_main
from pytest_cluster.contract.model import SshSpec
from pytest_cluster.launchers.result import ErrorKind
from pytest_cluster.probes import ProbeCall
from tests.conftest import on, on_no_node, planned
from tests.evidence.bundle.test_bundle import ed25519_key, ssh_key
from tests.launchers.test_ssh import launcher, spec_text
from tests.netns_cluster import NetnsCluster
from tests.test_plugin import jsonl


@pytest.mark.realcomponents
def test_host_and_storage_suite_passes_on_all_nodes(pytester: pytest.Pytester,
                                                     netns: NetnsCluster) -> None:
    fs = pytester.mkdir("fs")
    (pytester.path / "trial.yaml").write_text(spec_text(netns, fs))
    result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=len(planned(pytester, spec_text(netns, fs))))
    records = [r for r in jsonl(pytester) if r.get("type") == "result"]
    assert {r["node"] for r in records} == {"node1", "node2", "node3", "node4", "all"}


@pytest.mark.realcomponents
def test_a_signed_run_of_the_cluster_verifies_and_matches_itself_as_baseline(
        pytester: pytest.Pytester, netns: NetnsCluster, tmp_path: Path) -> None:
    """Evidence of a real run over ssh: every node's inventory read on the node, the
    manifest signed with a key file and with ssh-keygen, both verified; the run then
    serves as the baseline of the next one, whose nodes and hardware are found the same."""
    fs = pytester.mkdir("fs")
    private, public, _ = ed25519_key(tmp_path, "evidence")
    openssh = ssh_key(tmp_path, "id_evidence")
    (pytester.path / "trial.yaml").write_text(
        spec_text(netns, fs, "baseline: {tolerance: 99%}\n"))
    result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                                f"--cluster-sign-key={private}",
                                f"--cluster-ssh-sign-key={openssh}")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()[-2000:]
    first = (pytester.path / "reports" / "latest").resolve()
    for key in (public, openssh.with_suffix(".pub")):
        assert cli_main(["verify", str(first), "--key", str(key)]) == 0
    inventory = json.loads((first / "inventory.json").read_text())
    assert inventory["simulated"] is False and list(inventory["nodes"]) == netns.nodes
    machine_id = Path("/etc/machine-id").read_text().strip()
    addresses = set()
    for node, record in inventory["nodes"].items():
        assert record["machine_id"] == machine_id  # namespaces share the machine
        assert record["kernel"] == os.uname().release
        (fs_entry,) = record["filesystems"]
        assert fs_entry["path"] == str(fs) and "mount_point" in fs_entry, node
        addresses |= {nic["address"] for nic in record["interfaces"]}
    assert len(addresses) >= len(netns.nodes)  # each namespace has its own veth
    with (first / "junit.xml").open("a") as out:  # tampered: refused as a baseline
        out.write(" ")
    refused = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                                 f"--cluster-baseline={first}")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    (first / "junit.xml").write_bytes((first / "junit.xml").read_bytes()[:-1])
    again = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                               f"--cluster-baseline={first}")
    assert again.ret == pytest.ExitCode.OK, again.stdout.str()[-3000:]
    derived = [r for r in jsonl(pytester) if str(r.get("clause", "")).startswith("baseline.")]
    assert {r["clause"].split("[")[0] for r in derived} == {
        "baseline.nodes", "baseline.hardware", "baseline.performance"}
    assert sum(r["clause"] == "baseline.hardware" for r in derived) == len(netns.nodes)


@pytest.mark.realcomponents
def test_a_stopped_sshd_fails_only_its_node(pytester: pytest.Pytester,
                                            netns: NetnsCluster) -> None:
    fs = pytester.mkdir("fs")
    (pytester.path / "trial.yaml").write_text(spec_text(netns, fs))
    with netns.sshd_stopped("node3"):
        result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider")
    # the other nodes' checks each pass; same_software is not established while node3
    # does not answer, and the shared file cannot be read on node3
    cases = planned(pytester, spec_text(netns, fs))
    failing = on(cases, "node3") + on_no_node(cases, tuple(netns.nodes))
    result.assert_outcomes(passed=len(cases) - len(failing), failed=len(failing))
    failed = [r for r in jsonl(pytester) if r.get("outcome") == "failed"
              and r["node"] != "all"]
    assert {r["node"] for r in failed} == {"node3"}
    assert {r["error_kind"] for r in failed} == {"unreachable"}
    # refused at connect, not waited out to the probe timeout (bench/fanout.py times it)
    assert "node3: host probe unreachable: ssh: connection refused (no sshd?)" in failed[0][
        "message"]


@pytest.mark.realcomponents
def test_a_filesystem_not_shared_with_one_node_fails_the_shared_check(
        pytester: pytest.Pytester, netns: NetnsCluster) -> None:
    fs = pytester.mkdir("fs")
    (pytester.path / "trial.yaml").write_text(spec_text(netns, fs))
    netns.stop_sshd("node4")
    netns.start_sshd("node4", private_dir=fs)  # node4 sees its own empty fs
    netns.wait_for_port("node4")
    try:
        result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                                    "-k", "test_storage_shared")
    finally:
        netns.stop_sshd("node4")
        netns.start_sshd("node4")
        netns.wait_for_port("node4")
    result.assert_outcomes(failed=1)
    [record] = [r for r in jsonl(pytester) if r.get("type") == "result"]
    assert record["nodeid"].endswith(f"test_storage_shared[{fs}]")
    assert record["message"] == (f"Failed: all {fs} shared: a file written on node1 is not "
                                 "seen on node4")
    assert record["measured"] == "seen on 3 of 4 nodes"


@pytest.mark.realcomponents
def test_a_hanging_probe_is_killed_and_leaves_nothing(netns: NetnsCluster) -> None:
    ssh = launcher(netns)
    try:
        result = ssh.run_source("node2", ProbeCall("host"), "import time\ntime.sleep(600)\n", 2)
        # killed by the runner on the node at 2 s, not by ssh's later backstop
        assert result.error is ErrorKind.TIMEOUT
        assert result.message == "no answer within 2 s; killed on the node"
        time.sleep(0.3)
        assert netns.python_processes("node2") == []
    finally:
        ssh.close()


@pytest.mark.realcomponents
def test_wrong_key_is_auth_refused_and_missing_python_is_named(netns: NetnsCluster,
                                                                tmp_path: Path) -> None:
    key = tmp_path / "other"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    # a config without the cluster's key: -i adds to the config's IdentityFile
    config = tmp_path / "config"
    config.write_text(netns.ssh_config.read_text().replace("IdentityFile", "#IdentityFile"))
    wrong = launcher(netns, ssh=SshSpec(config=str(config), identity_file=str(key),
                                        options=(("IdentityAgent", "none"),),
                                        connect_timeout_s=3))
    missing = launcher(netns, python="/no/such/python")
    try:
        refused = wrong.run(ProbeCall("host"), ["node1"], 30)["node1"]
        assert refused.error is ErrorKind.AUTH_REFUSED, refused.describe()
        absent = missing.run(ProbeCall("host"), ["node1"], 30)["node1"]
        assert absent.error is ErrorKind.INTERPRETER_MISSING, absent.describe()
        assert absent.message == "'/no/such/python' not found on the node (check cluster.python)"
    finally:
        wrong.close()
        missing.close()


@pytest.mark.realcomponents
def test_a_node_off_the_network_fails_at_connect(netns: NetnsCluster) -> None:
    ssh = launcher(netns)
    subprocess.run(["ip", "-n", netns.netns("node2"), "link", "set", "eth0", "down"],
                   check=True)
    try:
        results = ssh.run(ProbeCall("host"), netns.nodes, 60)
    finally:
        subprocess.run(["ip", "-n", netns.netns("node2"), "link", "set", "eth0", "up"],
                       check=True)
        ssh.close()
    assert [n for n, r in results.items() if not r.ok] == ["node2"]
    # ssh's connect timeout (3 s) ended it, not the 60 s probe timeout (that would read
    # `timeout`); bench/fanout.py times it
    assert results["node2"].error is ErrorKind.UNREACHABLE
    assert results["node2"].message == "ssh: node not reachable"
    assert "timed out" in results["node2"].stderr_tail


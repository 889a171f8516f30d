"""The provider's gate on a real SLURM: examples/slurm/pytest-cluster-prolog.sh installed as
slurm.conf's Prolog (PrologFlags=Alloc) on the namespace cluster, and the HealthCheckProgram
script run on a node as slurmd runs it, with a contract holding every section that can run
there (host, software, storage, fabric: each node's own eth0; interconnect and training,
which are not at the sanity level). node3's scratch filesystem is a 1 MiB tmpfs (in its own
mount namespace, which its slurmd, prolog and jobs share): the contract's capacity clause
fails there alone. 20 consecutive jobs on the healthy nodes run and drain none; on node3
slurmd drains the node and the job does not run; the health check drains it with the
clause in the reason, but keeps a drain by someone else (an admin's reason) as it is; a
typo in the contract drains no node and says so. The health check's gate resumes
(--resume): node3 drained by it and fixed (a contract its 1 MiB scratch meets) is put
back by its next pass; node4 drained by an admin for 'maintenance' stays drained after a
pass; node3 drained by us and failing again stays drained with the new reason."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.netns_cluster import NetnsCluster
from tests.slurm_scripts import HEALTHCHECK, PROLOG, installed

pytestmark = pytest.mark.realcomponents

#: The contract: every section that can run on the namespace nodes.
CONTRACT = """cluster:
  name: gate
  nodes: node[1-4]
  launcher: ssh
  python: {python}
  probe_timeout: 1 min
{section}
host:
  cpu_cores: ">= 1"
  memory: ">= 256 MiB"
  software: {{python: ">= 3.9"}}
storage:
  - path: {scratch}
    capacity: ">= 64 MiB"
fabric:
  devices: "eth*"
  ports: 1
  link_layer: Ethernet
  pcie: false                   # a veth has no PCI device, so no PCIe link to judge
interconnect:
  inter_node: {{kind: veth, nics_per_node: 1, rate_per_nic: 1 Gb/s}}
  payloads: [16 MiB]
  ranks_per_node: 1
  busbw: ">= 80%"
training:
  steps: 5
  step_time: "<= 60 s"
"""


@pytest.fixture(scope="module")
def gate(netns: NetnsCluster, tmp_path_factory: pytest.TempPathFactory,
         ) -> Iterator[tuple[NetnsCluster, Path, Path]]:
    where = tmp_path_factory.mktemp("gate")
    scratch = where / "scratch"
    scratch.mkdir()
    spec = where / "contract.yaml"
    spec.write_text(CONTRACT.format(python=sys.executable, scratch=scratch,
                                    section=netns.launcher_section("ssh")), encoding="utf-8")
    prolog = installed(PROLOG, where, spec, where)
    running = netns.slurmctld is not None
    netns._stop_slurm()
    env = netns.start_slurm(prolog=prolog, tmpfs={"node3": (str(scratch), "1m")})
    saved = {key: os.environ.get(key) for key in env}
    os.environ.update(env)
    try:
        yield netns, spec, where
    finally:
        netns._stop_slurm()
        netns.tmpfs = {}
        if running:  # the other modules' plain SLURM again
            netns.start_slurm()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _job(node: str, marker: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["sbatch", "--parsable", f"--nodelist={node}",
                           f"--output={marker.parent / (node + '.out')}",
                           f"--wrap=touch {marker}"],
                          capture_output=True, text=True, check=True, timeout=60)


def _ran(netns: NetnsCluster, where: Path, node: str, marker: Path) -> None:
    """Wait for the job's marker; fail saying what SLURM and the prolog said."""
    try:
        netns.wait_for(lambda: marker.exists() or None, f"the job on {node} ran", 120)
    except RuntimeError:
        log = next((where / "prolog").glob(f"{node}-*/pytest.log"), where / "none")
        queue = subprocess.run(["squeue", "-a", "-l"], capture_output=True, text=True,
                               check=False).stdout
        raise AssertionError(
            f"{queue}\n{netns.scontrol('show', 'node', node)}\n"
            f"{log.read_text()[-3000:] if log.exists() else 'no prolog log'}") from None


#: Consecutive jobs on the healthy nodes, each after the last one ran.
JOBS = 20


def test_the_prolog_lets_healthy_nodes_run_and_drains_an_unhealthy_one(
        gate: tuple[NetnsCluster, Path, Path]) -> None:
    netns, _, where = gate
    healthy = [node for node in netns.nodes if node not in netns.tmpfs]
    for job in range(JOBS):
        node = healthy[job % len(healthy)]
        marker = where / f"ran-{job}-{node}"
        _job(node, marker)
        _ran(netns, where, node, marker)
    assert [netns.node_state(node) for node in healthy] == ["idle"] * len(healthy)
    verdicts = sorted((where / "prolog").glob("*/latest/verdict.json"))
    assert len(verdicts) == JOBS
    for path in verdicts:  # each accepted at the sanity level, every section judged
        text = path.read_text()
        assert '"verdict": "ACCEPTED"' in text and '"level": "sanity"' in text, text
    ran3 = where / "ran-node3"
    _job("node3", ran3)
    netns.wait_for(lambda: "drain" in netns.node_state("node3"), "node3 drained", 120)
    reason = netns.scontrol("show", "node", "node3")
    assert "Prolog error" in reason or "prolog" in reason.lower(), reason
    time.sleep(2)
    assert not ran3.exists()  # the job did not run on the node the prolog failed
    # why is the prolog run's evidence, on that node's side
    found = [v.read_text() for v in (where / "prolog").glob("node3-*/latest/verdict.json")]
    assert found and '"REJECTED"' in found[-1] and "storage[" in found[-1]
    assert "capacity" in found[-1] and '"outcome": "FAIL"' in found[-1]


def _health_check(netns: NetnsCluster, script: Path, node: str,
                  ) -> subprocess.CompletedProcess[str]:
    """The health check as slurmd runs it: in the node's namespaces (its slurmd's: node3's
    has its 1 MiB scratch), with no search path; it always exits 0."""
    done = subprocess.run(["nsenter", "-t", str(netns.slurmd[node].pid), "--all", "env", "-i",
                           f"SLURM_CONF={os.environ['SLURM_CONF']}", str(script)],
                          capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    return done


def _drained_by_hand(netns: NetnsCluster, node: str, reason: str) -> None:
    netns.scontrol("update", f"NodeName={node}", "State=DRAIN", f"Reason={reason}")
    netns.wait_for(lambda: "drain" in netns.node_state(node), f"{node} drained", 60)


def _resumed_by_hand(netns: NetnsCluster, node: str) -> None:
    """`node` back in service, whatever drained it (an earlier test, a failed one)."""
    if "drain" in netns.node_state(node):
        netns.scontrol("update", f"NodeName={node}", "State=RESUME")
    netns.wait_for(lambda: "drain" not in netns.node_state(node), f"{node} back", 60)


#: The start of the reason the health check drains node3 with (its scratch: 1 MiB).
#: ... starting with the failure's fault code, so `sinfo -R` groups by it
OUR_REASON = "Reason=PC-STORAGE-CAPACITY pytest-cluster rejected: 1 clause(s) failed: storage["


def test_the_health_check_drains_with_pytest_clusters_reason(
        gate: tuple[NetnsCluster, Path, Path]) -> None:
    """An admin's drain of the failing node3 is kept, reason and all (said); once it is
    resumed by hand, the health check drains node3 with pytest-cluster's reason."""
    netns, spec, where = gate
    health = installed(HEALTHCHECK, where, spec, where)
    _drained_by_hand(netns, "node3", "maintenance")
    said = _health_check(netns, health, "node3").stderr
    assert "kept drained node3: drained by someone else: maintenance; its failure: " \
        f"{OUR_REASON.removeprefix('Reason=')}" in said, said
    assert "Reason=maintenance" in netns.scontrol("show", "node", "node3")
    _resumed_by_hand(netns, "node3")
    for node in ("node4", "node3"):  # node4 is healthy
        _health_check(netns, health, node)
    assert "drain" not in netns.node_state("node4")
    shown = netns.scontrol("show", "node", "node3")
    assert OUR_REASON in shown, shown


def test_a_typo_in_the_contract_drains_no_node(gate: tuple[NetnsCluster, Path, Path]) -> None:
    netns, spec, where = gate
    good = spec.read_text(encoding="utf-8")
    spec.write_text(good.replace("\nfabric:", "\nfabrik:"), encoding="utf-8")
    try:
        netns.scontrol("update", "NodeName=node3", "State=RESUME")  # fixed by hand
        netns.wait_for(lambda: "drain" not in netns.node_state("node3"), "node3 back", 60)
        for node in netns.nodes:  # node3 too: its check cannot run, it is not judged
            marker = where / f"typo-{node}"
            _job(node, marker)
            _ran(netns, where, node, marker)
        health = installed(HEALTHCHECK, where, spec, where)
        for node in netns.nodes:
            done = subprocess.run(["nsenter", "-t", str(netns.slurmd[node].pid), "--all",
                                   "env", "-i", f"SLURM_CONF={os.environ['SLURM_CONF']}",
                                   str(health)], capture_output=True, text=True,
                                  check=False, timeout=120)
            assert done.returncode == 0
            assert "ERROR" in done.stderr and "fabrik: unknown key" in done.stderr
        assert all("drain" not in netns.node_state(node) for node in netns.nodes)
        gates = [p.read_text() for p in (where / "prolog").glob("*/gate.log")
                 if "fabrik" in p.read_text()]
        assert len(gates) == len(netns.nodes)
        assert all("exit 4: the spec or an option is not valid" in g for g in gates)
    finally:
        spec.write_text(good, encoding="utf-8")


def test_the_health_check_resumes_a_node_it_drained_once_it_passes(
        gate: tuple[NetnsCluster, Path, Path]) -> None:
    """node3 fails and is drained by the health check; fixed (here: a contract whose
    capacity its 1 MiB scratch meets), the next check passes and resumes it."""
    netns, spec, where = gate
    _resumed_by_hand(netns, "node3")
    _health_check(netns, installed(HEALTHCHECK, where, spec, where), "node3")
    assert "drain" in netns.node_state("node3")
    assert OUR_REASON in netns.scontrol("show", "node", "node3")
    fixed = where / "fixed"
    fixed.mkdir(exist_ok=True)
    text = spec.read_text(encoding="utf-8")
    assert 'capacity: ">= 64 MiB"' in text
    (fixed / "contract.yaml").write_text(
        text.replace('capacity: ">= 64 MiB"', 'capacity: ">= 256 KiB"'), encoding="utf-8")
    health = installed(HEALTHCHECK, fixed, fixed / "contract.yaml", where)
    said = _health_check(netns, health, "node3").stderr
    assert "resumed: scontrol update NodeName=node3 State=RESUME (it passed; its drain " \
        f"was ours: {OUR_REASON.removeprefix('Reason=')}" in said, said
    netns.wait_for(lambda: "drain" not in netns.node_state("node3"), "node3 resumed", 60)


def test_a_pass_leaves_a_node_an_admin_drained_drained(
        gate: tuple[NetnsCluster, Path, Path]) -> None:
    netns, spec, where = gate
    health = installed(HEALTHCHECK, where, spec, where)
    _drained_by_hand(netns, "node4", "maintenance")
    try:
        said = _health_check(netns, health, "node4").stderr
        assert "PASS" in said, said
        assert "not resumed node4: drained by someone else: maintenance" in said, said
        assert "drain" in netns.node_state("node4")
        assert "Reason=maintenance" in netns.scontrol("show", "node", "node4")
    finally:
        _resumed_by_hand(netns, "node4")


def test_a_node_drained_by_us_that_fails_again_stays_drained_with_the_new_reason(
        gate: tuple[NetnsCluster, Path, Path]) -> None:
    netns, spec, where = gate
    health = installed(HEALTHCHECK, where, spec, where)
    _resumed_by_hand(netns, "node3")
    _drained_by_hand(netns, "node3", "PC-OLD pytest-cluster rejected: an earlier check")
    said = _health_check(netns, health, "node3").stderr
    assert "FAIL node3: rejected: 1 clause(s) failed: storage[" in said, said
    assert "drain" in netns.node_state("node3")
    shown = netns.scontrol("show", "node", "node3")
    assert OUR_REASON in shown and "an earlier check" not in shown, shown

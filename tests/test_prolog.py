"""The provider's gate on a real SLURM: examples/slurm/pytest-cluster-prolog.sh installed as
slurm.conf's Prolog (PrologFlags=Alloc) on the namespace cluster, and the HealthCheckProgram
script run on a node as slurmd runs it. node3's scratch filesystem is a 1 MiB tmpfs (in its
own mount namespace, which its slurmd, prolog and jobs share): the contract's capacity
clause fails there alone. A job on a healthy node runs; on node3 slurmd drains the node and
the job does not run; the health check drains with pytest-cluster's own reason."""

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


@pytest.fixture(scope="module")
def gate(netns: NetnsCluster, tmp_path_factory: pytest.TempPathFactory,
         ) -> Iterator[tuple[NetnsCluster, Path, Path]]:
    where = tmp_path_factory.mktemp("gate")
    scratch = where / "scratch"
    scratch.mkdir()
    spec = where / "contract.yaml"
    spec.write_text(f"cluster:\n  name: gate\n  nodes: node[1-4]\n  launcher: ssh\n"
                    f"  python: {sys.executable}\n  probe_timeout: 1 min\n"
                    f"{netns.launcher_section('ssh')}\n"
                    f"storage:\n  - path: {scratch}\n    capacity: '>= 64 MiB'\n",
                    encoding="utf-8")
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


def test_the_prolog_lets_a_healthy_node_run_and_drains_an_unhealthy_one(
        gate: tuple[NetnsCluster, Path, Path]) -> None:
    netns, _, where = gate
    ran1, ran3 = where / "ran-node1", where / "ran-node3"
    _job("node1", ran1)
    _job("node3", ran3)
    netns.wait_for(lambda: "drain" in netns.node_state("node3"), "node3 drained", 120)
    reason = netns.scontrol("show", "node", "node3")
    assert "Prolog error" in reason or "prolog" in reason.lower(), reason
    try:
        netns.wait_for(lambda: ran1.exists() or None, "the job on node1 ran", 120)
    except RuntimeError:
        log = next((where / "prolog").glob("node1-*/pytest.log"), where / "none")
        queue = subprocess.run(["squeue", "-a", "-l"], capture_output=True, text=True,
                               check=False).stdout
        raise AssertionError(
            f"{queue}"
            f"\n{netns.scontrol('show', 'node', 'node1')}\n"
            f"{log.read_text()[-3000:] if log.exists() else 'no prolog log'}") from None
    time.sleep(2)
    assert not ran3.exists()  # the job did not run on the node the prolog failed
    # why is the prolog run's evidence, on that node's side
    verdicts = sorted((where / "prolog").glob("*/*/verdict.json"))
    found = [v.read_text() for v in verdicts if '"node3"' in v.read_text()]
    assert found and '"REJECTED"' in found[-1] and "capacity" in found[-1]
    assert any('"node1"' in v.read_text() and '"verdict": "ACCEPTED"' in v.read_text()
               for v in verdicts)


def test_the_health_check_drains_with_pytest_clusters_reason(
        gate: tuple[NetnsCluster, Path, Path]) -> None:
    netns, spec, where = gate
    health = installed(HEALTHCHECK, where, spec, where)
    # as slurmd runs it: in the node's namespaces (its slurmd's: node3's has its 1 MiB
    # scratch), with no search path; node4 is healthy
    for node in ("node4", "node3"):
        subprocess.run(["nsenter", "-t", str(netns.slurmd[node].pid), "--all", "env", "-i",
                        f"SLURM_CONF={os.environ['SLURM_CONF']}", str(health)],
                       check=True, timeout=120)
    assert "drain" not in netns.node_state("node4")
    shown = netns.scontrol("show", "node", "node3")
    assert "Reason=pytest-cluster rejected: 1 clause(s) failed: storage[" in shown, shown

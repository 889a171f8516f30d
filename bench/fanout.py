"""Fan-out: are nodes probed in parallel, not one after the other?

1. The host probe through the launcher on 1 node vs 256 nodes (sim launcher with a 200 ms
   round-trip per node, so waiting in parallel shows), and on 1 vs 16 local processes
   standing in for nodes (real processes on this machine's cores).
2. Where root and sshd are available: the 4 network-namespace nodes through ssh, all at
   once vs a serial loop; and what a dead node costs (one sshd stopped, one node off the
   network): its connect timeout, not the probe timeout.
3. Collecting and running the GPU suite on a simulated 128-node x 8-GPU cluster
   (target < 60 s on a 2-core machine).

The last line is `ratio=<256-node time / 1-node time>` for the sim launcher (target <= 3).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pytest_cluster.contract.model import ClusterSpec, SshSpec
from pytest_cluster.contract.sections.sim_records import SimSpec
from pytest_cluster.launchers.local import LocalLauncher
from pytest_cluster.launchers.sim import SimLauncher
from pytest_cluster.probes import ProbeCall

ROOT = Path(__file__).resolve().parent.parent
HOST = ProbeCall("host")


def timed(fn: object) -> float:
    start = time.perf_counter()
    fn()  # type: ignore[operator]
    return time.perf_counter() - start


def sim_fanout() -> tuple[float, float]:
    nodes = tuple(f"sim{i:03d}" for i in range(256))
    launcher = SimLauncher(ClusterSpec("b", nodes, "sim", sys.executable, 60, 256),
                           SimSpec("H100-SXM-80GB", 8, latency_s=0.2))
    one = min(timed(lambda: launcher.run(HOST, nodes[:1], 60)) for _ in range(3))
    many = min(timed(lambda: launcher.run(HOST, nodes, 60)) for _ in range(3))
    return one, many


def local_fanout() -> tuple[float, float]:
    nodes = tuple(f"n{i}" for i in range(16))
    launcher = LocalLauncher(ClusterSpec("b", nodes, "local", sys.executable, 60, 64))
    one = min(timed(lambda: launcher.run(HOST, nodes[:1], 60)) for _ in range(3))
    many = timed(lambda: launcher.run(HOST, nodes, 60))
    return one, many


def ssh_fanout() -> str:
    sys.path.insert(0, str(ROOT))
    from pytest_cluster.launchers.ssh import SshLauncher  # noqa: PLC0415
    from tests.netns_cluster import NetnsCluster, Unavailable  # noqa: PLC0415
    try:
        cluster = NetnsCluster(4)
    except Unavailable as exc:
        return f"ssh: skipped ({exc})"
    with cluster:
        spec = ClusterSpec("b", tuple(cluster.nodes), "ssh", sys.executable, 60, 64)
        launcher = SshLauncher(spec, SshSpec(config=str(cluster.ssh_config)))
        launcher.run(HOST, cluster.nodes, 60)  # open the shared connections
        parallel = min(timed(lambda: launcher.run(HOST, cluster.nodes, 60)) for _ in range(3))
        serial = min(timed(lambda: [launcher.run(HOST, [n], 60) for n in cluster.nodes])
                     for _ in range(3))
        launcher.close()
        # what a dead node costs the run: its connect timeout (3 s), not the probe timeout
        cluster.stop_sshd("node3")
        dead = SshLauncher(spec, SshSpec(config=str(cluster.ssh_config), connect_timeout_s=3))
        refused = timed(lambda: dead.run(HOST, cluster.nodes, 60))
        dead.close()
        subprocess.run(["ip", "-n", cluster.netns("node2"), "link", "set", "eth0", "down"],
                       check=True)
        off = SshLauncher(spec, SshSpec(config=str(cluster.ssh_config), connect_timeout_s=3))
        silent = timed(lambda: off.run(HOST, cluster.nodes, 60))
        off.close()
    return (f"ssh, 4 namespace nodes: parallel {parallel:.2f} s, serial loop {serial:.2f} s, "
            f"serial/parallel {serial / parallel:.2f}\n"
            f"ssh, probe timeout 60 s, connect timeout 3 s: one sshd stopped {refused:.2f} s, "
            f"and one node off the network too {silent:.2f} s")


def sim_suite() -> str:
    spec = (ROOT / "examples" / "sim-h100.yaml").read_text()
    spec = spec.replace("nodes: sim-gpu-[01-04]", "nodes: sim-gpu-[001-128]")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "sim128.yaml"
        path.write_text(spec)
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "pytest", f"--cluster={path}", "-q",
                               "-p", "no:cacheprovider", "-p", "no:hypothesispytest",
                               f"--cluster-reports={tmp}/reports"], cwd=tmp,
                              capture_output=True, text=True, check=False)
        seconds = time.perf_counter() - start
    last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-300:]
    return f"sim suite, 128 nodes x 8 GPUs: {seconds:.1f} s ({last.strip('= ')})"


def main() -> int:
    one, many = sim_fanout()
    print(f"sim launcher (0.2 s per node), host probe: 1 node {one:.2f} s, 256 nodes "
          f"{many:.2f} s (256 x 0.2 = 51.2 s if serial)")
    l_one, l_many = local_fanout()
    print(f"local launcher, host probe: 1 process {l_one:.2f} s, 16 processes {l_many:.2f} s "
          f"(16 x 1 = {16 * l_one:.2f} s if serial)")
    print(ssh_fanout())
    print(sim_suite())
    print(f"ratio={many / one:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

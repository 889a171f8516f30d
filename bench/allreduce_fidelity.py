"""All-reduce fidelity: busbw measured by our benchmark over links of a known rate.

On the 4-node namespace cluster (tests/netns_cluster.py; root, iproute2, openssh-server,
torch), every node's link is shaped with tc tbf to RATE (1 Gbit/s = 0.125 GB/s). Our
collective benchmark runs gloo all-reduce through the ssh launcher over 2 and 4 nodes at
PAYLOAD; busbw / shaped rate is the fidelity (target >= 0.85: gloo on this machine's
CPUs should not be what limits it). Then node3 is shaped to a quarter of the rate and the
slow-node search is timed for 4 nodes; it must name node3 alone.

Last line: `ratio=<busbw / shaped rate at 4 nodes>` (nan where the cluster cannot run).
"""

from __future__ import annotations

import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pytest_cluster.contract.loader import parse_spec
from pytest_cluster.contract.model import ClusterSpec, InterconnectSpec, SshSpec
from pytest_cluster.launchers.ssh import SshLauncher
from pytest_cluster.measure.network.benchmark import run_collective
from pytest_cluster.measure.network.node_search import find_slow_nodes

RATE_BITS = 1e9
PAYLOAD = 16 * 2**20
SPEC = """\
cluster: {name: bench, nodes: 'node[1-4]'}
interconnect:
  inter_node: {kind: veth, nics_per_node: 1, rate_per_nic: 1 Gb/s}
  payloads: [16 MiB]
  ranks_per_node: 1
  busbw: ">= 80%"
  warmup: 2
  iterations: 10
  timeout: 3 min
"""


def main() -> int:
    try:
        import torch  # noqa: F401, PLC0415

        from tests.netns_cluster import NetnsCluster, Unavailable  # noqa: PLC0415
    except ImportError as exc:
        print(f"cannot run: {exc}\nratio=nan")
        return 0
    spec = parse_spec(SPEC, "bench.yaml").interconnect
    assert isinstance(spec, InterconnectSpec)
    try:
        cluster = NetnsCluster(4)
    except Unavailable as exc:
        print(f"no namespace cluster here: {exc}\nratio=nan")
        return 0
    with cluster:
        launcher = SshLauncher(ClusterSpec("bench", tuple(cluster.nodes), "ssh",
                                           sys.executable, 300, 8),
                               SshSpec(config=str(cluster.ssh_config), connect_timeout_s=3))
        try:
            for node in cluster.nodes:
                cluster.shape(node, "1gbit")
            ratios = {}
            for count in (2, 4):
                started = time.perf_counter()
                run = run_collective(launcher, spec, "all_reduce", cluster.nodes[:count],
                                     [PAYLOAD])
                point = run.at(PAYLOAD) if run.ok else None
                if point is None:
                    print(f"{count} nodes: failed: {run.error}\nratio=nan")
                    return 1
                ratios[count] = point.busbw / (RATE_BITS / 8)
                low, median, high = point.spread
                print(f"{count} nodes all_reduce 16 MiB over 1 Gbit/s links: busbw "
                      f"{point.busbw / 1e9:.4f} GB/s = {ratios[count]:.3f} x 0.125 GB/s "
                      f"(iterations {low / 1e9:.4f}..{high / 1e9:.4f}, median "
                      f"{median / 1e9:.4f}; {time.perf_counter() - started:.1f} s)")
            cluster.shape("node3", "250mbit")

            def one(group: list[str]) -> float:
                got = run_collective(launcher, spec, "all_reduce", group, [PAYLOAD])
                point = got.at(PAYLOAD) if got.ok else None
                return point.busbw if point else float("nan")

            def measure(groups: list[list[str]]) -> list[float]:
                with ThreadPoolExecutor(max_workers=len(groups)) as pool:  # as the plugin
                    return list(pool.map(one, groups))

            started = time.perf_counter()
            search = find_slow_nodes(cluster.nodes, measure, 0.8 * RATE_BITS / 8)
            search_s = time.perf_counter() - started
            slow = [n for n, v in search.verdicts.items() if not v.ok]
            print(f"slow-node search, 4 nodes, node3 at 250 Mbit/s: {len(search.rounds)} "
                  f"rounds, {sum(len(r) for r in search.rounds)} jobs, "
                  f"{search_s:.1f} s; named {slow} "
                  f"({search.verdicts['node3'].busbw / 1e9:.4f} GB/s with "
                  f"{', '.join(search.verdicts['node3'].partners)})")
        finally:
            for node in cluster.nodes:
                cluster.shape(node, None)
            launcher.close()
    print(f"fidelity_2nodes={ratios[2]:.3f}")
    print(f"search_s={search_s:.1f}")
    print(f"ratio={ratios[4]:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

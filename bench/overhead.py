"""Overhead of the plugin: `pytest --cluster=SPEC` vs the same work without pytest.

Both sides do the same work: the direct side asks a Cluster (the object the `cluster`
fixture gives the tests) for every probe result and benchmark job the acceptance suite
uses - host, storage and `import torch` per filesystem, the GPU probes, the collectives
inside each node (on examples/localhost.yaml the gloo all-reduce of 2 ranks), the jobs over
node counts and the slow-node search - once each, with its own probe cache. The pytest
side runs the suite as `make demo` runs it (with hypothesis's pytest plugin disabled: it is
a dev dependency of this repository, not of the plugin, and costs ~0.75 s of import per
run), reports written. (Before, the direct side skipped the all-reduce: the ratio read
1.44 where the same work gave 1.08-1.2.)

Runs both, alternating, REPEATS times each, and prints the median wall times side by side;
the last line is `ratio=<pytest/direct>` (target <= 1.15). First it profiles one more
pytest run with cProfile and prints its exclusive time by owner (waiting on the probe and
job processes, pytest's own code, ours, the rest) and the functions of ours and of pytest's
that take the most.

Measured on the 2-CPU dev machine, shared with another engineer's runs (localhost.yaml,
13 cases, 5 rounds): pytest 8.80 s, direct 8.37 s, ratio=1.051 (+0.43 s a run). The profile
of the pytest side (10.5 s under cProfile): 93 % waiting on the probes and the all-reduce
job, ~0.6 s imports and built-ins, 0.13 s pytest's code (assertion rewriting of the
suite's modules 0.04 s, fixtures and hooks), 0.01 s ours (the session's report hooks,
evidence checks). What pytest adds is its start-up and imports, a fixed cost per run; per
case it is under a millisecond.

Since the run takes an inventory at its end (inventory.json), the direct side takes it too.
Measured then (5 rounds, same machine): pytest 9.67 s, direct 8.60 s, ratio=1.125; the
runs of either side spread over about 1 s, the storage and all-reduce timings varying.
"""

from __future__ import annotations

import argparse
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pytest_cluster.contract import load_spec
from pytest_cluster.measure import gpus, inventory, storage
from pytest_cluster.measure.calls import import_call, storage_call
from pytest_cluster.measure.cluster import Cluster
from pytest_cluster.measure.network import collectives, node_search

ROOT = Path(__file__).resolve().parent.parent


def direct(spec_path: Path) -> float:
    """The work the suite does, without pytest: every probe call and benchmark job the
    acceptance suite asks the `cluster` fixture for, once each, through the same Cluster
    (so the same launcher, the same probe cache writes and the same collectives: the gloo
    all-reduce inside each node, the jobs over node counts, the slow-node search), and the
    inventory taken once the checks are over."""
    spec = load_spec(spec_path)
    with tempfile.TemporaryDirectory() as cache:
        cluster = Cluster(spec, Path(cache))
        nodes = cluster.nodes
        start = time.perf_counter()
        cluster.host_all()
        for fs in spec.storage:
            cluster.probe_all(storage_call(fs))
            if fs.import_torch is not None:
                cluster.probe_all(import_call(fs))
            if fs.shared and len(nodes) >= 2:
                storage.shared_check(cluster, fs)
        if spec.gpus is not None:
            gpus.gpu_all(cluster)
            gpus.gpu_perf(cluster, nodes[0])
        ic = spec.interconnect
        if ic is not None:
            for collective in ic.collectives:
                for node in nodes:
                    collectives.intra_node(cluster, node, collective)
                for count in ic.node_counts:
                    collectives.inter_node(cluster, count, collective)
            if ic.node_network and len(nodes) >= 2:
                node_search.run(cluster)
        inventory.take(cluster, may_probe=True)  # as the run ends: inventory.json
        return time.perf_counter() - start


def via_pytest(spec_path: Path) -> float:
    with tempfile.TemporaryDirectory() as reports:
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "pytest", f"--cluster={spec_path}",
                               f"--cluster-reports={reports}", "-q", "-p", "no:cacheprovider",
                               "-p", "no:hypothesispytest"],
                              capture_output=True, text=True, check=False, cwd=ROOT)
        seconds = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"pytest failed:\n{done.stdout[-3000:]}")
    return seconds


#: Who a profiled function's exclusive time counts for, by where it is defined.
OWNERS = (("ours", ("pytest_cluster/", "acceptance/")),
          ("pytest", ("_pytest/", "pluggy/", "pytest_html/", "pytest_metadata/", "xdist/",
                      "execnet/", "jinja2/", "markupsafe/", "/pytest/", "iniconfig/")))
#: Built-ins where the controller waits for a probe or job process (a lock: a thread's).
WAITS = ("poll", "select", "waitpid", "acquire", "read of '_io", "readinto", "sleep")


def owner(where: tuple[str, int, str]) -> str:
    filename, _, function = where
    if filename == "~":
        return ("waiting on probes/jobs" if any(w in function for w in WAITS)
                else "built-ins (imports: marshal, compile, stat)")
    for name, parts in OWNERS:
        if any(part in filename for part in parts):
            return name
    return "other (imports, stdlib, yaml)"


def profile(spec_path: Path, top: int) -> None:
    """The pytest side once under cProfile: its exclusive time by owner, and the functions
    of our code and of pytest's with the most exclusive time."""
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "pytest.prof"
        subprocess.run([sys.executable, "-m", "cProfile", "-o", str(out), "-m", "pytest",
                        f"--cluster={spec_path}", f"--cluster-reports={scratch}/reports",
                        "-q", "-p", "no:cacheprovider", "-p", "no:hypothesispytest"],
                       capture_output=True, text=True, check=False, cwd=ROOT)
        stats = pstats.Stats(str(out))
    table = stats.stats  # type: ignore[attr-defined]
    total = max(entry[3] for entry in table.values())
    by_owner: dict[str, float] = {}
    for where, (_, _, tottime, _, _) in table.items():
        by_owner[owner(where)] = by_owner.get(owner(where), 0.0) + tottime
    print(f"profile of the pytest side ({total:.2f} s under cProfile), exclusive time by owner:")
    for name, seconds in sorted(by_owner.items(), key=lambda item: -item[1]):
        print(f"  {name:<32} {seconds:6.2f} s  {seconds / total:5.1%}")
    for name in ("ours", "pytest"):
        entries = sorted(((own, calls, where) for where, (_, calls, own, _, _)
                          in table.items() if owner(where) == name), reverse=True)[:top]
        print(f"top {top} by exclusive time, {name}:")
        for own, calls, (filename, line, function) in entries:
            short = filename.split("site-packages/")[-1].replace(str(ROOT) + "/", "")
            print(f"  {own:6.3f} s {calls:>7} calls  {short}:{line}({function})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--spec", type=Path, default=ROOT / "examples" / "localhost.yaml")
    parser.add_argument("--repeats", type=int, default=4)
    parser.add_argument("--profile", type=int, default=8, metavar="TOP",
                        help="profile one more pytest run and print the TOP entries of ours "
                             "and of pytest's (0: no profile)")
    args = parser.parse_args()
    if args.profile:
        profile(args.spec, args.profile)
    if not args.repeats:
        return
    pytest_times, direct_times = [], []
    for rep in range(args.repeats):  # alternate which goes first: caches favour the second
        if rep % 2:
            direct_times.append(direct(args.spec))
            pytest_times.append(via_pytest(args.spec))
        else:
            pytest_times.append(via_pytest(args.spec))
            direct_times.append(direct(args.spec))
    p, d = statistics.median(pytest_times), statistics.median(direct_times)
    print(f"spec: {args.spec}  repeats: {args.repeats}")
    print(f"{'':>8} {'median s':>9}  runs")
    print(f"{'pytest':>8} {p:9.2f}  {' '.join(f'{t:.2f}' for t in pytest_times)}")
    print(f"{'direct':>8} {d:9.2f}  {' '.join(f'{t:.2f}' for t in direct_times)}")
    print(f"overhead: {p - d:+.2f} s per run")
    print(f"ratio={p / d:.3f}")


if __name__ == "__main__":
    main()

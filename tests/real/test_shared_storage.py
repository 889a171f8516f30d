"""A real shared filesystem on the namespace cluster: a storage server on the switch serves
an export that every node mounts with sshfs over its own link (NetnsCluster.share). What is
written on one node is seen on every node and in the export; the contract's `shared` and
`write` clauses pass through the ssh launcher; and the rates are bounded by the links as
tc shapes them. Then the checkpoint burst (storage[].checkpoint) through the ssh launcher:
on equal links, with one node's link slow, with the storage server's link the bound, and
with a node lost while it writes. Then the data loader (storage[].dataloader): healthy, a
node farther away, a node lost."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.netns_cluster import STORAGE, NetnsCluster, Unavailable

MiB = 1 << 20


def mbit(rate: float) -> float:
    """`rate` Mbit/s in bytes/s."""
    return rate * 1e6 / 8


@pytest.fixture(scope="module")
def shared(netns: NetnsCluster) -> Iterator[tuple[str, Path]]:
    """The cluster's export mounted on every node; (the mount point, the export)."""
    mount = str(netns.workdir / "shared")
    try:
        netns.start_storage()
    except Unavailable as exc:
        pytest.skip(f"no storage server on this machine: {exc}")
    with netns.share(mount) as export:
        yield mount, export
    assert not any(netns.share_processes(node) for node in netns.nodes)
    assert not Path(mount).exists(), f"left under the mount point: {os.listdir(mount)}"


@pytest.fixture
def unshaped(netns: NetnsCluster) -> Iterator[None]:
    """Every link (the nodes', the storage server's) unlimited after the test."""
    yield
    for node in [*netns.nodes, STORAGE]:
        netns.shape(node, None)


#: what a node sees (argv: the mount, the storage server's directory, files under the
#: mount): JSON of each file's SHA-256, the filesystem types mounted on the mount, what
#: it finds in the storage server's directory
NODE_VIEW = """
import hashlib, json, os, sys
mount, hidden, names = sys.argv[1], sys.argv[2], sys.argv[3:]
with open("/proc/self/mounts") as f:
    types = [line.split()[2] for line in f if line.split()[1] == mount]
print(json.dumps({"sha256": {n: hashlib.sha256(open(os.path.join(mount, n), "rb").read())
                             .hexdigest() for n in names},
                  "types": types, "hidden": os.listdir(hidden)}))
"""


@pytest.mark.realcomponents
def test_a_file_written_on_one_node_is_seen_on_every_node_and_in_the_export(
        netns: NetnsCluster, shared: tuple[str, Path]) -> None:
    mount, export = shared
    data, other = os.urandom(3 * MiB + 17), os.urandom(MiB)
    netns.run_on("node1", [sys.executable, "-c", "import os, sys\n"
                           "with open(sys.argv[1], 'wb') as f:\n"
                           "    f.write(sys.stdin.buffer.read()); os.fsync(f.fileno())",
                           f"{mount}/from-node1"], stdin=data)
    (export / "from-storage").write_bytes(other)  # the storage server's own write
    assert (export / "from-node1").read_bytes() == data

    def view(node: str) -> dict[str, Any]:
        if node == STORAGE:
            return {"sha256sum": netns.run_on(STORAGE, ["sha256sum", str(export / "from-node1")])}
        return dict(json.loads(netns.run_on(node, [
            sys.executable, "-c", NODE_VIEW, mount, str(export.parent), "from-node1",
            "from-storage"])))

    with ThreadPoolExecutor(5) as pool:
        views = dict(zip([*netns.nodes, STORAGE],
                         pool.map(view, [*netns.nodes, STORAGE]), strict=True))
    digests = {"from-node1": hashlib.sha256(data).hexdigest(),
               "from-storage": hashlib.sha256(other).hexdigest()}
    assert views.pop(STORAGE)["sha256sum"].split()[0] == digests["from-node1"]
    # every node sees both files byte for byte, the export only as the sshfs mount (over
    # its link; the storage server's directory is hidden from it)
    assert views == {node: {"sha256": digests, "types": ["fuse.sshfs"], "hidden": []}
                     for node in netns.nodes}
    for node in netns.nodes:  # the node's sshfs and its ssh are no leftovers
        assert netns.left_on_node(node) == [], node
    # and this machine has no such mount: its mount point is an empty directory
    assert mount not in {line.split()[1] for line in Path("/proc/self/mounts").read_text()
                         .splitlines()}
    assert os.listdir(mount) == []
    netns.run_on("node2", ["rm", f"{mount}/from-node1", f"{mount}/from-storage"])
    assert os.listdir(export) == []


SHARED_SPEC = """\
cluster:
  name: sharedfs
  nodes: node[1-4]
  launcher: ssh
  python: {python}
  probe_timeout: 2 min
{section}
host: {{same_software: false}}
storage:
  - path: {mount}
    shared: true
    write: ">= 1 MB/s"
    io_size: 8 MiB
"""


def results(pytester: pytest.Pytester) -> list[dict[str, Any]]:
    lines = (pytester.path / "reports" / "latest" / "results.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, lines) if r.get("type") == "result"]


@pytest.mark.realcomponents
def test_the_contract_says_shared_and_measures_writes_on_every_node(
        pytester: pytest.Pytester, netns: NetnsCluster, shared: tuple[str, Path]) -> None:
    mount, export = shared
    (pytester.path / "t.yaml").write_text(SHARED_SPEC.format(
        python=sys.executable, section=netns.launcher_section("ssh"), mount=mount))
    result = pytester.runpytest("--cluster=t.yaml", "-p", "no:cacheprovider")
    cases = {r["nodeid"].split("::")[1]: r for r in results(pytester)}
    assert {case: r["outcome"] for case, r in cases.items()} == {
        f"test_storage_shared[{mount}]": "passed",
        **{f"test_storage_write[{node}-{mount}]": "passed" for node in netns.nodes}}, cases
    result.assert_outcomes(passed=1 + 4)
    shared_case = cases[f"test_storage_shared[{mount}]"]
    assert shared_case["raw"]["missing"] == shared_case["raw"]["different"] == []
    assert sorted(os.listdir(export)) == []  # the probes' files went with them
    for node in netns.nodes:
        assert netns.left_on_node(node) == [], node


@pytest.mark.realcomponents
@pytest.mark.usefixtures("unshaped")
def test_a_write_is_bounded_by_the_storage_servers_link(
        netns: NetnsCluster, shared: tuple[str, Path]) -> None:
    """16 MiB written and fsync'ed on node1 with the storage server's link at 200 Mbit/s
    (25 MB/s): at most 15% over it, and not far under (the link is what bounds it).
    Measured here: 23.6 MB/s (0.94 x)."""
    mount, export = shared
    netns.shape(STORAGE, "200mbit")
    rate = netns.timed_write("node1", f"{mount}/burst", 16 * MiB, keep=True)
    (export / "burst").unlink()  # on the server: FUSE, a close's release still on its
    # way, would hide a file removed through the mount (.fuse_hidden*) and may keep it
    print(f"200mbit storage link: {rate / 1e6:.2f} MB/s")
    assert 0.5 * mbit(200) <= rate <= 1.15 * mbit(200), rate


@pytest.mark.realcomponents
@pytest.mark.usefixtures("unshaped")
def test_concurrent_writes_name_the_node_with_the_slow_link(
        netns: NetnsCluster, shared: tuple[str, Path]) -> None:
    """All four nodes write 16 MiB at once, node3's link at 50 Mbit/s and the others' at
    400 Mbit/s: node3 is the slowest, each within 15% of its own link's rate or under.
    Measured here: node3 5.98 MB/s (of 6.25), the others 44.3-44.4 MB/s (of 50)."""
    mount, export = shared
    for node in netns.nodes:
        netns.shape(node, "50mbit" if node == "node3" else "400mbit")
    start_at = time.time() + 2.0  # after every ssh session is up

    def write(node: str) -> float:
        return netns.timed_write(node, f"{mount}/burst-{node}", 16 * MiB, start_at=start_at,
                                 keep=True)

    with ThreadPoolExecutor(len(netns.nodes)) as pool:
        rates = dict(zip(netns.nodes, pool.map(write, netns.nodes), strict=True))
    for node in netns.nodes:  # on the server, as above
        (export / f"burst-{node}").unlink()
    print({node: f"{rate / 1e6:.2f} MB/s" for node, rate in rates.items()})
    assert min(rates, key=rates.__getitem__) == "node3"
    assert rates["node3"] <= 1.15 * mbit(50), rates
    for node in ("node1", "node2", "node4"):
        assert 2 * rates["node3"] < rates[node] <= 1.15 * mbit(400), rates


@pytest.mark.realcomponents
@pytest.mark.usefixtures("unshaped")
def test_reads_cross_the_link_every_time(netns: NetnsCluster,
                                         shared: tuple[str, Path]) -> None:
    """A file read twice on node4 with its link at 100 Mbit/s: both reads are bounded by
    the link (the mount keeps nothing in the node's page cache between opens)."""
    mount, export = shared
    (export / "model.bin").write_bytes(os.urandom(8 * MiB))
    netns.shape("node4", "100mbit")
    try:
        rates = [netns.timed_read("node4", f"{mount}/model.bin") for _ in range(2)]
    finally:
        (export / "model.bin").unlink()
    print([f"{rate / 1e6:.2f} MB/s" for rate in rates])
    assert all(rate <= 1.15 * mbit(100) for rate in rates), rates


# -- the checkpoint burst (storage[].checkpoint) through the ssh launcher ----------------

CHECKPOINT_SPEC = """\
cluster:
  name: ckpt
  nodes: node[1-4]
  launcher: ssh
  python: {python}
  probe_timeout: 2 min
{section}
host: {{same_software: false}}
storage:
  - path: {mount}
    shared: true
    checkpoint:
      size_per_node: {size}
      block_size: 1 MiB
      write: "{write}"
      read: "{read}"
      keeps_up: {keeps_up}
"""
#: what each node writes and reads back: 0.7 s at 100 Mbit/s (the links are slow enough
#: that this machine's CPUs, which run every node's sshfs and ssh and the storage
#: server's, are not the limit; when other work keeps them busy, the rates fall)
SHARE = 8 * MiB
PREFIX = ".pytest-cluster-ckpt-"


def burst(pytester: pytest.Pytester, netns: NetnsCluster, mount: str, *, write: str,
          read: str, size: int = SHARE) -> dict[str, dict[str, Any]]:
    """`pytest --cluster` with the checkpoint spec through the ssh launcher (only the
    checkpoint cases): each case's result line by its name, the filesystem's path left
    out (`keeps_up[node3]`, `write`). keeps_up is 50%: a node a quarter as fast as the
    others fails it, one that TCP or this machine's busy CPUs slowed for a moment does
    not (the default 80% is the sim's to test)."""
    (pytester.path / "t.yaml").write_text(CHECKPOINT_SPEC.format(
        python=sys.executable, section=netns.launcher_section("ssh"), mount=mount,
        write=write, read=read, keeps_up="50%", size=f"{size // MiB} MiB"))
    pytester.runpytest("--cluster=t.yaml", "-p", "no:cacheprovider", "-k", "checkpoint")
    found = {}
    for record in results(pytester):
        case = record["nodeid"].split("::")[1].removeprefix("test_storage_checkpoint_")
        found[case.replace(f"-{mount}]", "]").replace(f"[{mount}]", "")] = record
    return found


def node_verdicts(pytester: pytest.Pytester) -> dict[str, str]:
    found = json.loads((pytester.path / "reports" / "latest" / "verdict.json").read_text())
    return {item["node"]: item["verdict"] for item in found["nodes"]}


def node_rates(case: dict[str, Any]) -> dict[str, float]:
    """A checkpoint case's rate of each node (bytes/s)."""
    return dict(case["raw"]["node_bytes_per_s"])


def nothing_left(netns: NetnsCluster, export: Path) -> None:
    """No file of the burst in the export, no process of it on any node."""
    assert [name for name in os.listdir(export) if name.startswith(PREFIX)] == []
    assert os.listdir(export) == []
    def empty(node: str) -> bool:
        return netns.left_on_node(node) == []

    for node in netns.nodes:  # (an sshd just restarted still serves wait_for_port's probe)
        netns.wait_for(functools.partial(empty, node), f"nothing left on {node}", 10)


def shown(case: dict[str, Any]) -> str:
    return ", ".join(f"{node} {rate / 1e6:.2f}" for node, rate in node_rates(case).items())


@pytest.mark.realcomponents
@pytest.mark.usefixtures("unshaped")
def test_a_checkpoint_burst_on_equal_links_passes_and_leaves_nothing(
        pytester: pytest.Pytester, netns: NetnsCluster, shared: tuple[str, Path]) -> None:
    """Every node's link at 100 Mbit/s (12.5 MB/s), the storage server's unlimited: each
    node writes 8 MiB and reads another node's back at most at its link's rate (the read
    crosses the link: nothing of another node's file is in this node's cache, and the
    span timed is the whole read, not only the calls); write, read and every keeps_up
    pass. Measured here: write 11.7-11.9 MB/s per node (46-47 MB/s aggregate), read
    12.1 MB/s (before the probe timed the whole span, reads at 200 Mbit/s came out at up to
    1.04 x the link)."""
    mount, export = shared
    for node in netns.nodes:
        netns.shape(node, "100mbit")
    cases = burst(pytester, netns, mount, write=">= 10 MB/s", read=">= 2 MB/s per node")
    write, read = cases["write"], cases["read"]
    print(f"write {write['measured_base'] / 1e6:.2f} MB/s ({shown(write)}); "
          f"read {read['measured_base'] * 4 / 1e6:.2f} MB/s ({shown(read)})")
    assert {case: r["outcome"] for case, r in cases.items()} == {
        "write": "passed", "read": "passed",
        **{f"keeps_up[{node}]": "passed" for node in netns.nodes}}, cases
    assert write["raw"]["total_bytes"] == read["raw"]["total_bytes"] == 4 * SHARE
    for case in (write, read):
        for node, rate in node_rates(case).items():
            assert rate <= 1.02 * mbit(100), (case["raw"]["phase"], node, rate)
    assert set(node_verdicts(pytester).values()) == {"ACCEPTED"}
    nothing_left(netns, export)


@pytest.mark.realcomponents
@pytest.mark.usefixtures("unshaped")
def test_a_node_on_a_slow_link_holds_the_burst_back_and_only_it_is_rejected(
        pytester: pytest.Pytester, netns: NetnsCluster, shared: tuple[str, Path]) -> None:
    """node3's link at 25 Mbit/s, the others' at 100: node3 writes and reads at a quarter
    of the others' rate, fails its keeps_up and is named the culprit of the aggregate
    write, which misses a bound the others would have met; the read's bound holds and
    names nobody. Measured here: node3 3.02 MB/s write, 3.02 read; the others 11.8 and
    12.1; aggregate write 12.1 MB/s (4 x 8 MiB in node3's 2.8 s)."""
    mount, export = shared
    for node in netns.nodes:
        netns.shape(node, "25mbit" if node == "node3" else "100mbit")
    cases = burst(pytester, netns, mount, write=">= 30 MB/s", read=">= 1 MB/s")
    write, read = cases["write"], cases["read"]
    print(f"write {write['measured_base'] / 1e6:.2f} MB/s ({shown(write)}); "
          f"read {read['measured_base'] / 1e6:.2f} MB/s ({shown(read)})")
    assert {case: r["outcome"] for case, r in cases.items()} == {
        "write": "failed", "read": "passed", "keeps_up[node1]": "passed",
        "keeps_up[node2]": "passed", "keeps_up[node3]": "failed",
        "keeps_up[node4]": "passed"}, cases
    assert write["culprits"] == "node3" and "held back by node3" in write["message"]
    assert "culprits" not in read
    assert "holds the checkpoint burst back: write" in cases["keeps_up[node3]"]["message"]
    for case in (write, read):  # (the others' rates fall when this machine's CPUs are
        rates = node_rates(case)  # busy with other work, node3's is its link's)
        assert min(rates, key=rates.__getitem__) == "node3", rates
        assert rates["node3"] <= 1.02 * mbit(25), rates
    assert node_verdicts(pytester) == {"node1": "ACCEPTED", "node2": "ACCEPTED",
                                       "node3": "REJECTED", "node4": "ACCEPTED"}
    nothing_left(netns, export)


@pytest.mark.realcomponents
@pytest.mark.usefixtures("unshaped")
def test_the_aggregate_is_bounded_by_the_storage_servers_link_and_blames_no_node(
        pytester: pytest.Pytester, netns: NetnsCluster, shared: tuple[str, Path]) -> None:
    """The storage server's link at 200 Mbit/s (25 MB/s), the nodes' unlimited, each
    writing 16 MiB: the burst's aggregate write and read are that link's rate (within
    15%: under it by the protocols' headers), and the bounds above it fail naming no node.
    The nodes share the link as TCP does, unevenly for writes from four hosts (the last to
    finish gets its fair share, the first ones more: the slowest write was 0.68-0.97 of
    the nodes' median over 16 runs, below the default keeps_up of 80% in 3 of them); at
    50% every node keeps up. A slower link is shared worse: at 50 Mbit/s (its tbf queue a
    quarter as long) a write stalled and the aggregate fell to 0.69 x. Measured here:
    aggregate write 23.8 MB/s, read 23.9 (0.95 x; 0.95-0.97 in 16 runs)."""
    mount, export = shared
    netns.shape(STORAGE, "200mbit")
    cases = burst(pytester, netns, mount, write=">= 40 MB/s", read=">= 40 MB/s",
                  size=16 * MiB)
    write, read = cases["write"], cases["read"]
    print(f"write {write['raw']['aggregate_bytes_per_s'] / 1e6:.2f} MB/s ({shown(write)}); "
          f"read {read['raw']['aggregate_bytes_per_s'] / 1e6:.2f} MB/s ({shown(read)})")
    for case in (write, read):
        assert case["outcome"] == "failed" and "culprits" not in case, case
        assert "held back" not in case["message"]
        aggregate = case["raw"]["aggregate_bytes_per_s"]
        assert 0.85 * mbit(200) <= aggregate <= 1.15 * mbit(200), case["raw"]
    assert all(cases[f"keeps_up[{node}]"]["outcome"] == "passed" for node in netns.nodes)
    assert set(node_verdicts(pytester).values()) == {"ACCEPTED"}
    nothing_left(netns, export)


@pytest.mark.realcomponents
@pytest.mark.usefixtures("unshaped")
@pytest.mark.parametrize("victim", ["node3", "node1"])
def test_a_node_lost_during_the_burst_is_unreachable_and_its_files_are_removed(
        pytester: pytest.Pytester, netns: NetnsCluster, shared: tuple[str, Path],
        victim: str) -> None:
    """`victim`'s sshd (its sessions, its writer, its mount) is stopped as soon as its
    file appears in the export: its keeps_up fails as unreachable, the aggregates are not
    established (not_all_nodes), the other nodes (reading each other's files) keep up and
    are accepted, and nothing of the burst is left, its partial file included. node1 is
    the job's first node, where the burst's files used to be removed."""
    mount, export = shared
    for node in netns.nodes:
        netns.shape(node, "100mbit")
    mine = f"-{netns.nodes.index(victim)}"  # one writer per node: its rank is its index
    stack, done, stopped = contextlib.ExitStack(), threading.Event(), threading.Event()

    def watch() -> None:
        while not done.is_set():
            if any(name.startswith(PREFIX) and name.endswith(mine)
                   for name in os.listdir(export)):
                stack.enter_context(netns.sshd_stopped(victim))
                stopped.set()
                return
            time.sleep(0.01)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        cases = burst(pytester, netns, mount, write=">= 1 MB/s", read=">= 1 MB/s")
    finally:
        done.set()
        watcher.join()
        stack.close()  # its sshd (and its mount) back
    assert stopped.is_set()
    others = [node for node in netns.nodes if node != victim]
    for phase in ("write", "read"):
        case = cases[phase]
        assert (case["outcome"], case["error_kind"]) == ("failed", "not_all_nodes"), case
        assert f"1 of 4 node(s) did not {phase} their share ({victim}: write: " in \
            case["message"]
    lost = cases[f"keeps_up[{victim}]"]
    assert (lost["outcome"], lost["error_kind"]) == ("failed", "unreachable"), lost
    assert all(cases[f"keeps_up[{node}]"]["outcome"] == "passed" for node in others), cases
    assert node_verdicts(pytester) == {node: "UNREACHABLE" if node == victim else "ACCEPTED"
                                       for node in netns.nodes}
    document = json.loads(next((pytester.path / "reports" / "latest" / "probes")
                               .glob("checkpoint-*.json")).read_text())
    assert document["details"]["removed"]["node"] == others[0]
    assert {r["node"] for r in document["read"]} == set(others)
    nothing_left(netns, export)



# -- the data loader (storage[].dataloader) through the ssh launcher ---------------------

DATALOADER_SPEC = """\
cluster:
  name: loader
  nodes: node[1-4]
  launcher: ssh
  python: {python}
  probe_timeout: 2 min
{section}
host: {{same_software: false}}
storage:
  - path: {mount}
    shared: true
    dataloader:
      size_per_node: 8 MiB
      duration: 2 s
      workers: 2
      metadata_files: 20
      iops: "{iops}"
      read: ">= 10 KB/s per node"
      metadata: "{metadata}"
      keeps_up: 50%
"""
DL_PREFIX = ".pytest-cluster-dl-"


def loader(pytester: pytest.Pytester, netns: NetnsCluster, mount: str, *,
           iops: str = ">= 10 IOPS per node",
           metadata: str = ">= 10 ops/s per node") -> dict[str, dict[str, Any]]:
    """`pytest --cluster` with the dataloader spec through the ssh launcher (only the
    dataloader cases): each case's result line by its name, the filesystem's path left
    out (`keeps_up[node3]`, `iops`). keeps_up is 50%, as the checkpoint's (TCP shares a
    link unevenly)."""
    (pytester.path / "t.yaml").write_text(DATALOADER_SPEC.format(
        python=sys.executable, section=netns.launcher_section("ssh"), mount=mount,
        iops=iops, metadata=metadata))
    pytester.runpytest("--cluster=t.yaml", "-p", "no:cacheprovider", "-k", "dataloader")
    found = {}
    for record in results(pytester):
        case = record["nodeid"].split("::")[1].removeprefix("test_storage_dataloader_")
        found[case.replace(f"-{mount}]", "]").replace(f"[{mount}]", "")] = record
    return found


def node_iops(case: dict[str, Any]) -> dict[str, float]:
    """A dataloader case's operations per second of each node."""
    return {node: f["ops_per_s"] for node, f in case["raw"]["nodes"].items()}


def nothing_loaded_left(netns: NetnsCluster, export: Path) -> None:
    """No file or directory of the data loader in the export, no process on any node."""
    assert os.listdir(export) == []

    def empty(node: str) -> bool:
        return netns.left_on_node(node) == []

    for node in netns.nodes:
        netns.wait_for(functools.partial(empty, node), f"nothing left on {node}", 10)


@pytest.mark.realcomponents
@pytest.mark.usefixtures("unshaped")
def test_a_data_loader_on_the_share_passes_and_leaves_nothing(
        pytester: pytest.Pytester, netns: NetnsCluster, shared: tuple[str, Path]) -> None:
    """Every node's two workers read 4 KiB at random offsets of the other nodes' files
    for 2 s, one read at a time, then make 20 small files each: iops, read, metadata and
    every keeps_up pass, the reads bypassed the page cache with O_DIRECT (sshfs takes it:
    FUSE sends each read to sshfs; test_a_node_farther_away... shows each crosses the
    link), and nothing of the run is left in the export. Every link is delayed 2 ms each
    way, as a cluster's nodes are equally far from its storage: each read waits for its
    round trip, so the nodes' rates are the links', not what this machine's 2 CPUs give
    each node (unshaped, 1,800-5,700 IOPS per node, and once in CI a node below half the
    median). Measured here with the delay: 210-213 IOPS per node, metadata 99 ops/s."""
    mount, export = shared
    try:
        for node in netns.nodes:
            netns.delay(node, 2)
        cases = loader(pytester, netns, mount)
    finally:
        for node in netns.nodes:
            netns.delay(node, None)
    print({case: (r["outcome"], r.get("measured_base")) for case, r in cases.items()})
    print(node_iops(cases["iops"]), cases["iops"]["method"])
    print(node_iops(cases["metadata"]))
    for key in ("iops", "read"):
        assert "(O_DIRECT)" in cases[key]["method"], cases[key]["method"]
    assert {case: r["outcome"] for case, r in cases.items()} == {
        "iops": "passed", "read": "passed", "metadata": "passed",
        **{f"keeps_up[{node}]": "passed" for node in netns.nodes}}, cases
    assert set(node_verdicts(pytester).values()) == {"ACCEPTED"}
    nothing_loaded_left(netns, export)



@pytest.mark.realcomponents
@pytest.mark.parametrize(("bound", "culprits"), [(180, "node3"), (400, None)])
def test_a_node_farther_away_makes_fewer_reads_and_only_it_is_rejected(
        pytester: pytest.Pytester, netns: NetnsCluster, shared: tuple[str, Path],
        bound: int, culprits: str | None) -> None:
    """Every node's link delayed 2 ms each way, node3's 20 ms (NetnsCluster.delay: a
    delay line on this kernel): one read at a time is latency-bound, so node3 makes a
    tenth of the others' reads and metadata operations, each worker's reads fewer than
    one a round trip (they cross the link: nothing comes from the node's page cache).
    node3 fails its keeps_up, and only it is rejected. The aggregate IOPS bound fails;
    it names node3 where, at the median instead, it would have held (180 per node),
    and nobody where even then it would not (400). Measured here: node1, 2, 4 210-213
    IOPS (2 workers), node3 24; metadata 99 and 11.5 ops/s; 162 IOPS per node
    aggregate."""
    mount, export = shared
    try:
        for node in netns.nodes:
            netns.delay(node, 20 if node == "node3" else 2)
        cases = loader(pytester, netns, mount, iops=f">= {bound} IOPS per node",
                       metadata=">= 1 ops/s per node")
    finally:
        for node in netns.nodes:
            netns.delay(node, None)
    iops, rates = cases["iops"], node_iops(cases["iops"])
    print(f"{iops['measured_base']:.1f} IOPS per node; {rates}; "
          f"metadata {node_iops(cases['metadata'])}")
    assert {case: r["outcome"] for case, r in cases.items()} == {
        "iops": "failed", "read": "passed", "metadata": "passed",
        "keeps_up[node1]": "passed", "keeps_up[node2]": "passed",
        "keeps_up[node3]": "failed", "keeps_up[node4]": "passed"}, cases
    assert iops.get("culprits") == culprits, iops
    assert ("held back by node3" in iops["message"]) == (culprits is not None)
    assert "slows the data loaders: read " in cases["keeps_up[node3]"]["message"]
    for node, rate in rates.items():  # 2 workers, each a read a round trip at most
        assert rate <= 2 * 1000 / (2 * (20 if node == "node3" else 2)), rates
    assert max(rates["node3"], node_iops(cases["metadata"])["node3"]) < \
        0.25 * min(rate for node, rate in rates.items() if node != "node3"), rates
    assert node_verdicts(pytester) == {"node1": "ACCEPTED", "node2": "ACCEPTED",
                                       "node3": "REJECTED", "node4": "ACCEPTED"}
    nothing_loaded_left(netns, export)


@pytest.mark.realcomponents
@pytest.mark.usefixtures("unshaped")
@pytest.mark.parametrize("victim", ["node3", "node1"])
def test_a_node_lost_while_loading_is_unreachable_and_nothing_is_left(
        pytester: pytest.Pytester, netns: NetnsCluster, shared: tuple[str, Path],
        victim: str) -> None:
    """`victim`'s sshd (its sessions, its workers, its mount) is stopped as soon as its
    first worker's file appears in the export: its keeps_up fails as unreachable, the
    aggregates are not established (not_all_nodes), the other nodes (reading each
    other's files) keep up and are accepted, and nothing of the run is left, the
    victim's partial files included. node1 is the job's first node. Every link is 2 ms
    away, as in the healthy run: the others' rates are the links', not what this
    machine's 2 CPUs give each node (on links only shaped, CI once saw a node's metadata
    rate at 49% of the median fail its keeps_up)."""
    mount, export = shared
    for node in netns.nodes:
        netns.delay(node, 2)
    mine = f"-{2 * netns.nodes.index(victim)}"  # two workers a node: its first's rank
    stack, done, stopped = contextlib.ExitStack(), threading.Event(), threading.Event()

    def watch() -> None:
        while not done.is_set():
            if any(name.startswith(DL_PREFIX) and name.endswith(mine)
                   and "-md-" not in name for name in os.listdir(export)):
                stack.enter_context(netns.sshd_stopped(victim))
                stopped.set()
                return
            time.sleep(0.01)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        cases = loader(pytester, netns, mount)
    finally:
        done.set()
        watcher.join()
        stack.close()  # its sshd (and its mount) back
        for node in netns.nodes:
            netns.delay(node, None)
    assert stopped.is_set()
    print({case: (r["outcome"], r.get("error_kind"), r["message"][:200])
           for case, r in cases.items()})
    others = [node for node in netns.nodes if node != victim]
    for key in ("iops", "read", "metadata"):
        case = cases[key]
        assert (case["outcome"], case["error_kind"]) == ("failed", "not_all_nodes"), case
        assert "1 of 4 node(s) have no " in case["message"] and victim in case["message"]
    lost = cases[f"keeps_up[{victim}]"]
    assert (lost["outcome"], lost["error_kind"]) == ("failed", "unreachable"), lost
    assert all(cases[f"keeps_up[{node}]"]["outcome"] == "passed" for node in others), cases
    assert node_verdicts(pytester) == {node: "UNREACHABLE" if node == victim else "ACCEPTED"
                                       for node in netns.nodes}
    nothing_loaded_left(netns, export)

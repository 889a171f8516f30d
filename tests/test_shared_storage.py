"""A real shared filesystem on the namespace cluster: a storage server on the switch serves
an export that every node mounts with sshfs over its own link (NetnsCluster.share). What is
written on one node is seen on every node and in the export; the contract's `shared` and
`write` clauses pass through the ssh launcher; and the rates are bounded by the links as
tc shapes them (the facts checkpoint-burst tests build on)."""

from __future__ import annotations

import hashlib
import json
import os
import sys
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
    assert not Path(mount).exists()


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
    mount, _ = shared
    netns.shape(STORAGE, "200mbit")
    rate = netns.timed_write("node1", f"{mount}/burst", 16 * MiB)
    print(f"200mbit storage link: {rate / 1e6:.2f} MB/s")
    assert 0.5 * mbit(200) <= rate <= 1.15 * mbit(200), rate


@pytest.mark.realcomponents
@pytest.mark.usefixtures("unshaped")
def test_concurrent_writes_name_the_node_with_the_slow_link(
        netns: NetnsCluster, shared: tuple[str, Path]) -> None:
    """All four nodes write 16 MiB at once, node3's link at 50 Mbit/s and the others' at
    400 Mbit/s: node3 is the slowest, each within 15% of its own link's rate or under.
    Measured here: node3 5.98 MB/s (of 6.25), the others 44.3-44.4 MB/s (of 50)."""
    mount, _ = shared
    for node in netns.nodes:
        netns.shape(node, "50mbit" if node == "node3" else "400mbit")
    start_at = time.time() + 2.0  # after every ssh session is up

    def write(node: str) -> float:
        return netns.timed_write(node, f"{mount}/burst-{node}", 16 * MiB, start_at=start_at)

    with ThreadPoolExecutor(len(netns.nodes)) as pool:
        rates = dict(zip(netns.nodes, pool.map(write, netns.nodes), strict=True))
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

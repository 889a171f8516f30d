"""The storage probes a run reads of each filesystem (measure/calls.py's calls, run once
per run on every node), and the shared filesystem's check: a file written on one node is
read on every other."""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING

from pytest_cluster.launchers import ProbeResult
from pytest_cluster.measure.calls import import_call, storage_call
from pytest_cluster.probes import ProbeCall

if TYPE_CHECKING:
    from pytest_cluster.contract.model import StorageSpec
    from pytest_cluster.measure.prober import Prober


def storage(prober: Prober, node: str, fs: StorageSpec) -> ProbeResult:
    """The storage probe's result for `fs` on `node` (the parts this run selects)."""
    return prober.probe(storage_call(fs, prober.selected_clauses), node)


def import_latency(prober: Prober, node: str, fs: StorageSpec) -> ProbeResult:
    """The import-latency probe's result for `fs`'s interpreter on `node`."""
    return prober.probe(import_call(fs), node)


def shared_check(prober: Prober, fs: StorageSpec) -> tuple[str, ProbeResult,
                                                       dict[str, ProbeResult]]:
    """Write a file on the first node that answers, read it on every node, remove it:
    (writer, its write result, every node's read result). Not cached: run each time.

    The file is removed however the check ends: a write that fails removes its own
    (probes/shared_fs.py), and the last write started is removed here even when a
    Ctrl-C cuts the check short. Its name carries the time by which its reads are
    over (a write and a read, each within probe_timeout, and 10 minutes for the
    clocks of the nodes and this machine to differ): a later write sweeps it after
    that if this process is killed first."""
    timeout = prober.spec.cluster.probe_timeout_s
    margin_s = 600

    def call(token: str, mode: str) -> ProbeCall:
        return ProbeCall("shared_fs", ("--path", fs.path, "--token", token, mode))

    write = ProbeResult(prober.nodes[0], "shared_fs", None, message="no node answered")
    writer = prober.nodes[0]
    started: tuple[str, str] | None = None  # (node, token) of a write that may exist
    try:
        for node in prober.nodes:
            expires = int(time.time() + 2 * timeout + margin_s)
            token = f"{expires}-{uuid.uuid4().hex[:12]}"
            started = (node, token)
            writer, write = node, prober.launcher.run(call(token, "write"), [node],
                                                      timeout)[node]
            if write.ok and "error" not in write.payload():
                break
            # a failed write removed its file; a killed one is swept after it expires
            started = None
        if started is None:
            return writer, write, {}
        return writer, write, prober.launcher.run(call(started[1], "read"),
                                                  prober.nodes, timeout)
    finally:
        if started is not None:
            prober.launcher.run(call(started[1], "remove"), [started[0]], timeout)

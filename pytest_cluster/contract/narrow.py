"""A run of some nodes of the contract (`--cluster-node`): which nodes, and the spec those
nodes are checked against. Collection, the plan, the probes and the verdict see only the
chosen nodes, so a run of one node costs the same whatever the cluster's size; the clauses
that span nodes (the same software everywhere, all-reduce across nodes, the slow-node
search, a filesystem's bound on the whole cluster's total) are listed as not checked,
saying why (contract/promised.py reads `Spec.whole`).
"""

from __future__ import annotations

import socket
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from pytest_cluster.contract.clauses import declared
from pytest_cluster.contract.launchers import KINDS
from pytest_cluster.errors import UnitError, head
from pytest_cluster.hostlist import compress_hostlist, expand_hostlist

if TYPE_CHECKING:
    from pytest_cluster.contract.model import Spec, StorageSpec

#: `--cluster-node=.`: this host.
THIS_HOST = "."
#: What SLURM sets in a prolog or epilog's environment (SLURM_SCRIPT_CONTEXT): run there,
#: a run checks this host alone.
SLURM_CONTEXTS = ("prolog_slurmd", "epilog_slurmd")
#: The most names --cluster-node may give in all.
MAX_CHOSEN = 100_000
#: The most nodes one run checks: what it collects within 30 s and 1.5 GiB at the sanity
#: level (bench/scale_sanity.py: 1,024 simulated 8-GPU nodes of examples/sim-h100.yaml
#: collect in about 16 s at 720 MiB; 4,096 take 40 s and 2.7 GiB, every case an item).
#: A spec may list more (hostlist.MAX_NODES): a run takes them in parts (--cluster-node).
MAX_RUN_NODES = 1024


def run_size(nodes: Sequence[str]) -> None:
    """ValueError when `nodes` are more than one run checks, naming the first part to
    run."""
    if len(nodes) <= MAX_RUN_NODES:
        return
    first = compress_hostlist(nodes[:MAX_RUN_NODES])
    raise ValueError(f"{len(nodes):,} nodes in one run, more than the {MAX_RUN_NODES:,} one "
                     f"run checks (collecting their cases takes time and memory in "
                     f"proportion); test a larger cluster in parts "
                     f"(--cluster-node={head(first)}, then the next {MAX_RUN_NODES:,})")


def this_host(env: Mapping[str, str]) -> list[str]:
    """The names this host may have in cluster.nodes: SLURM's name for it (a prolog's
    SLURMD_NODENAME), then its host name, then that name's first label."""
    names = [env.get("SLURMD_NODENAME", "").strip(), socket.gethostname()]
    names.append(names[1].split(".", 1)[0])
    return [name for name in dict.fromkeys(names) if name]


def in_slurm_script(env: Mapping[str, str]) -> bool:
    """Whether this runs as a SLURM prolog or epilog (a run of this host alone)."""
    return env.get("SLURM_SCRIPT_CONTEXT", "") in SLURM_CONTEXTS


def chosen(values: Sequence[str], nodes: Sequence[str],
           env: Mapping[str, str]) -> tuple[tuple[str, ...], bool]:
    """The nodes `--cluster-node` names (each a node, a hostlist like gpu-[001-004], or `.`
    for this host), in the spec's order, and whether they are this host alone. ValueError
    saying which name is not one of cluster.nodes."""
    known = set(nodes)
    wanted: set[str] = set()
    here = False
    for value in values:
        if value.strip() == THIS_HOST:
            names = this_host(env)
            found = next((name for name in names if name in known), None)
            if found is None:
                raise ValueError(f"this host ({', '.join(head(n) for n in names)}) is not one "
                                 "of the spec's cluster.nodes")
            wanted.add(found)
            here = True
            continue
        try:
            names = expand_hostlist(value)
        except UnitError as exc:
            raise ValueError(f"{head(value)!r}: {exc}") from None
        unknown = [name for name in names if name not in known]
        if unknown:
            shown = ", ".join(head(name) for name in unknown[:5]) + (f" and {len(unknown) - 5} more"
                                              if len(unknown) > 5 else "")
            raise ValueError(f"not in the spec's cluster.nodes: {shown}")
        wanted.update(names)
        if len(wanted) > MAX_CHOSEN:
            raise ValueError(f"more than {MAX_CHOSEN} nodes")
    return tuple(node for node in nodes if node in wanted), here and len(wanted) == 1


def narrow(spec: Spec, nodes: Sequence[str], here: bool = False) -> Spec:
    """The spec a run of `nodes` checks: the cluster cut to them, no job across nodes
    (its node counts are the whole cluster's), and the whole spec kept to say what is not
    checked here. `here`: the one node is this host, so a launcher that reaches nodes
    from elsewhere (ssh, srun: a prolog must not) gives way to the local one."""
    launcher = spec.cluster.launcher
    local = here and KINDS[launcher].remote
    cluster = replace(spec.cluster, nodes=tuple(nodes), chosen_from=spec.cluster.nodes,
                      launcher="local" if local else launcher, here=local)
    interconnect = spec.interconnect
    if interconnect is not None:
        interconnect = replace(interconnect, node_counts=(), node_counts_dropped=())
    return replace(spec, cluster=cluster, interconnect=interconnect, whole=spec,
                   storage=tuple(map(_without_totals, spec.storage)))


def _without_totals(fs: StorageSpec) -> StorageSpec:
    """A filesystem's promises that some of its nodes can keep: a bound on what every node
    does at once that is the whole cluster's (no 'per node', no 'per GPU': `dataloader.iops:
    ">= 500 kIOPS"`) is a clause across nodes, never held against the nodes of this run."""
    totals = {declared(f"storage.{key}").name(fs.path)
              for part in (fs.checkpoint, fs.dataloader) if part is not None
              for key, per in part.basis if not per}
    if not totals:
        return fs
    return replace(fs, clauses=tuple(c for c in fs.clauses if c.key not in totals))

"""The `slurm:` section: where the slurm launcher runs its steps (partition, account,
reservation, time limit), and whether the nodes are those of the current allocation."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from yaml.nodes import MappingNode, Node

from pytest_cluster.contract.launchers import KINDS
from pytest_cluster.contract.model import ClusterSpec, SlurmSpec
from pytest_cluster.contract.reading.fields import boolean, field, or_default, time_between
from pytest_cluster.contract.reading.mapping import Map, for_launcher
from pytest_cluster.contract.reading.yaml_nodes import scalar
from pytest_cluster.errors import UnitError
from pytest_cluster.hostlist import expand_hostlist

if TYPE_CHECKING:
    from pytest_cluster.contract.reading.located_errors import Ctx

KEYS = ("partition", "account", "reservation", "time_limit", "allocation", "mpi")
_NAME_RE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
ALLOCATION_ENV = "SLURM_JOB_NODELIST"


def _name(what: str) -> Callable[[object], str]:
    def parse(raw: object) -> str:
        if not isinstance(raw, str) or not _NAME_RE.match(raw):
            raise UnitError(f"expected a {what} name (letters, digits, '_', '-', '.'), "
                            f"got {raw!r}")
        return raw
    return parse


def _minutes(raw: object) -> int:
    seconds = time_between(60, 7 * 86400, "from 1 min to 7 days")(raw)
    return int(-(-seconds // 60))


def wants_allocation(node: Node | None) -> bool:
    """Whether a `slurm:` section asks for the allocation's nodes (before it is validated)."""
    if not isinstance(node, MappingNode):
        return False
    return any(scalar(k) == "allocation" and scalar(v) is True for k, v in node.value)


def allocation_nodes(ctx: Ctx, node: Node | None) -> tuple[str, ...]:
    """The nodes of the SLURM allocation this runs in (salloc, sbatch)."""
    nodelist = os.environ.get(ALLOCATION_ENV, "").strip()
    if not nodelist:
        ctx.error(node, "slurm.allocation", f"no SLURM allocation here ({ALLOCATION_ENV} is "
                  "not set): run inside salloc or sbatch, or list cluster.nodes")
        return ()
    try:
        return tuple(expand_hostlist(nodelist))
    except UnitError as exc:
        ctx.error(node, "slurm.allocation", f"{ALLOCATION_ENV}={nodelist!r}: {exc}")
        return ()


def parse_slurm(ctx: Ctx, node: Node | None, cluster: ClusterSpec) -> SlurmSpec | None:
    if node is None:
        return SlurmSpec() if KINDS[cluster.launcher].section == "slurm" else None
    if not for_launcher(ctx, node, "slurm", cluster):
        return None
    table = Map(ctx, node, "slurm", KEYS)
    if not isinstance(node, MappingNode):
        return None
    result = SlurmSpec(
        partition=field(ctx, table.take("partition"), "slurm.partition", _name("partition")),
        account=field(ctx, table.take("account"), "slurm.account", _name("account")),
        reservation=field(ctx, table.take("reservation"), "slurm.reservation",
                          _name("reservation")),
        time_limit_min=field(ctx, table.take("time_limit"), "slurm.time_limit", _minutes),
        allocation=bool(field(ctx, table.take("allocation"), "slurm.allocation", boolean)),
        mpi=or_default(field(ctx, table.take("mpi"), "slurm.mpi", _name("MPI plugin")),
                       "pmix"),
    )
    table.finish()
    return result

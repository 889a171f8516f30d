"""What a simulated node answers, as two tables: each probe the sim answers by name, and
each distributed job's rank program (probes/<name>.py sent through job_node) by name. The
sim launcher looks a call up here; a probe or program added to the sim is a line here.
The GPU probe is not here: the sim runs the real one against the simulated NVML."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from pytest_cluster.contract.extensions import added_sim_answers, adds_to, free
from pytest_cluster.probes.gpu_perf import parse_options
from pytest_cluster.probes.jobs import JOB_PROGRAMS, job_source
from pytest_cluster.sim.cluster import gpu_perf_payload, host_payload, inventory_payload
from pytest_cluster.sim.collectives import Benchmark, job_ranks, nccl_tests_payload
from pytest_cluster.sim.dcgm import dcgm_payload
from pytest_cluster.sim.nics import nic_payload, perftest_ranks
from pytest_cluster.sim.pingpong import pingpong_ranks
from pytest_cluster.sim.storage import checkpoint_ranks, dataloader_ranks, shared_fs_payload

if TYPE_CHECKING:
    from pytest_cluster.contract.model import InterconnectSpec
    from pytest_cluster.contract.sections.sim_records import SimSpec
    from pytest_cluster.probes.job_node import RankEntry
    from pytest_cluster.sim.job_node import NodePart

#: A probe's answer: (the description, the spec's links, the node, the call's arguments);
#: the payload of whichever probe it answers for (its TypedDict, or an extension's dict).
ProbeAnswer = Callable[["SimSpec", "InterconnectSpec | None", str, Sequence[str]],
                       Mapping[str, object]]
#: A job's ranks, node by node: (the description, the links, the job's nodes, one part).
JobAnswer = Callable[["SimSpec", "InterconnectSpec | None", Sequence[str], "NodePart"],
                     list[list["RankEntry"]]]

#: Each probe the sim answers: ours, then the installed extensions' (contract/extensions.py).
_OURS: dict[str, ProbeAnswer] = {
    "host": lambda sim, _ic, node, _args: host_payload(sim, node),
    "inventory": lambda sim, _ic, node, args: inventory_payload(sim, node, list(args[1::2])),
    "gpu_perf": lambda sim, _ic, node, args: gpu_perf_payload(sim, node,
                                                              parse_options(list(args))),
    "nic": lambda sim, ic, node, args: nic_payload(sim, node, ic, tuple(args)),
    "nccl_tests": nccl_tests_payload,
    "shared_fs": lambda sim, _ic, node, args: shared_fs_payload(sim, node, args),
    "dcgm": lambda sim, _ic, node, args: dcgm_payload(sim, node, args),
}
PROBES: dict[str, ProbeAnswer] = dict(_OURS)


@adds_to
def _add_extensions() -> None:
    """The extensions' answers, each checked (contract/extensions.checked_answer)."""
    PROBES.update(free(added_sim_answers(), PROBES, "the sim's answers"))


JOBS: dict[str, JobAnswer] = {
    "collective": lambda sim, ic, nodes, part: job_ranks(
        sim, ic, Benchmark.from_args(part.rank_args), nodes, part.ranks_per_node, part.env),
    "perftest": lambda sim, ic, nodes, part: perftest_ranks(sim, ic, nodes, part.rank_args),
    "pingpong": lambda sim, ic, nodes, part: pingpong_ranks(sim, ic, nodes, part.rank_args),
    "checkpoint": lambda sim, _ic, nodes, part: checkpoint_ranks(
        sim, nodes, part.ranks_per_node, part.rank_args),
    "dataloader": lambda sim, _ic, nodes, part: dataloader_ranks(
        sim, nodes, part.ranks_per_node, part.rank_args),
}


def job_named(program: str) -> str | None:
    """Which of our rank programs `program` (its source) is; None: none the sim plays."""
    return _by_source().get(program)


@functools.cache
def _by_source() -> dict[str, str]:
    return {job_source(name): name for name in JOB_PROGRAMS if name in JOBS}

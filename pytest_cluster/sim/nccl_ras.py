"""NCCL's RAS service on simulated nodes: the status a job's processes would give when some
of its ranks are dead (their GPU's `nccl_dead` fault), written as NCCL 2.28.7 and later
write it in JSON (the shape probes/_lib/nccl_ras.py documents, with its source) and read
back by the same reader a real rank uses, so the sim's hung ranks report what real ones
would."""

from __future__ import annotations

import json
from collections.abc import Sequence

from pytest_cluster.probes._lib.nccl_ras import RasReport, parse_json

#: NCCL's names of the collectives RAS counts (ncclFuncToString), by the benchmark's names.
NCCL_NAMES = {"all_reduce": "AllReduce", "all_gather": "AllGather",
              "reduce_scatter": "ReduceScatter"}
#: The collectives each rank's counts are kept for, in NCCL's order.
COUNTED = ("Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce")
#: The NCCL version the simulated RAS says it is.
VERSION = "2.28.9"


def status_json(nodes: Sequence[str], ranks_per_node: int, dead: set[int],
                collective: str, launched: int) -> str:
    """The JSON status of one communicator of every rank of the job: the live ranks each
    launched `launched` operations of `collective`, the `dead` ones are missing,
    unresponsive and considered dead. A rank's host is its node's name (RAS's is the
    node's address; a simulated node's address is its name)."""
    name = NCCL_NAMES.get(collective, "AllReduce")
    world = len(nodes) * ranks_per_node

    def where(rank: int) -> dict[str, object]:
        local = rank % ranks_per_node
        return {"rank": rank, "host": nodes[rank // ranks_per_node], "pid": 4000 + rank,
                "cuda_dev": local, "nvml_dev": local}

    ranks = [{**where(rank),
              "status": {"init_state": 0, "async_error": 0, "finalize_called": False,
                         "destroy_flag": False, "abort_flag": False},
              "collective_counts": {c: launched if c == name else 0 for c in COUNTED}}
             for rank in range(world) if rank not in dead]
    missing = [{**where(rank), "status": {"unresponsive": True, "considered_dead": True}}
               for rank in sorted(dead)]
    return json.dumps({
        "nccl_version": VERSION, "cuda_runtime_version": 12040, "cuda_driver_version": 12040,
        "timestamp": "2026-01-01 00:00:00", "communicators_count": 1,
        "communicators": [{"hash": "0x5111ad", "secondary_hash": "0x1:0x2", "size": world,
                           "ranks_count": len(ranks), "missing_ranks_count": len(missing),
                           "ranks": ranks, "missing_ranks": missing}],
        "ras": {"collection_time_sec": 0.5, "timeouts_count": 0}}, indent=2, allow_nan=False)


def hang_report(backend: str, nodes: Sequence[str], ranks_per_node: int, dead: set[int],
                collective: str, launched: int = 25) -> RasReport:
    """What a live rank of the hung job reports of RAS (probes/_lib/nccl_ras.hang_status):
    the status read over NCCL, none over gloo."""
    if backend != "nccl":
        return {"available": False, "reason": f"the job ran over {backend}, not NCCL"}
    report = parse_json(status_json(nodes, ranks_per_node, dead, collective, launched))
    report["addr"] = "localhost:28028"
    return report

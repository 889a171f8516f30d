"""The `training:` section: a real training loop over every node of the cluster.

    training:
      steps: 50                   # measured steps, after 3 warm-up steps
      ranks_per_node: 8           # default: one per GPU slot (gpus:), else 1
      backend: nccl               # default: nccl with gpus:, else gloo
      step_time: "<= 5 s"         # every step (default <= 60 s); a step over it is a hang
      spread: "<= 25%"            # the step time's coefficient of variation (the default)
      tokens_per_s: ">= 20000"    # over the whole job, when promised
      timeout: 15 min             # the whole job, wall clock (default)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from yaml.nodes import MappingNode, Node

from pytest_cluster.contract.clauses import keys
from pytest_cluster.contract.launchers import KINDS
from pytest_cluster.contract.model import ClusterSpec, GpuSpec, TrainingSpec
from pytest_cluster.contract.reading.clause_parsers import promises
from pytest_cluster.contract.reading.fields import field, or_default, time_between, whole
from pytest_cluster.contract.reading.mapping import Map
from pytest_cluster.contract.sections.interconnect import MAX_RANKS, backend

if TYPE_CHECKING:
    from pytest_cluster.contract.reading.located_errors import Ctx


def parse_training(ctx: Ctx, node: Node | None, cluster: ClusterSpec,
              gpus: GpuSpec | None) -> TrainingSpec | None:
    """`training: {steps: 50, step_time: "<= 5 s", tokens_per_s: ">= 2000", ...}`."""
    if node is None:
        return None
    table = Map(ctx, node, "training", keys("training"))
    if not isinstance(node, MappingNode):
        return None
    refused = KINDS[cluster.launcher].no_training
    if refused is not None:
        ctx.error(node, "training", f"the {cluster.launcher} launcher {refused}; run the "
                  "training loop with launcher: local (or ssh, slurm)")

    steps = field(ctx, table.take("steps"), "training.steps", whole(1, 100_000))
    ranks = field(ctx, table.take("ranks_per_node"), "training.ranks_per_node",
                  whole(1, MAX_RANKS))
    chosen = field(ctx, table.take("backend"), "training.backend", backend)
    timeout = field(ctx, table.take("timeout"), "training.timeout",
                    time_between(10, 24 * 3600, "from 10 s to 24 h"))
    found = promises(ctx, table, "training")
    table.finish()
    return TrainingSpec(clauses=found, steps=or_default(steps, 50),
                        ranks_per_node=or_default(ranks, gpus.slots if gpus else 1),
                        backend=or_default(chosen, "nccl" if gpus is not None else "gloo"),
                        timeout_s=or_default(timeout, 900.0), line=node.start_mark.line + 1)

"""This run against an accepted earlier one (--cluster-baseline=DIR): the cases that say
whether the cluster is still the one that was accepted.

- `baseline.nodes`: the same nodes (missing and new ones named);
- `baseline.hardware`, per node: the same machine, GPUs (a swapped GPU named with both
  serials), NICs and HCAs (address or GUID, firmware, rate), block devices, driver
  (hardware.py);
- `baseline.performance`, per measured figure of both runs: not worse than at baseline by
  more than the spec's `baseline.tolerance` (5 % unless it says), in the direction its
  clause counts as better (performance.py). A node's figure this run measured in a group
  with nodes not known good (`bounded_by`: the slow-node search's first pairs; the slowest
  bounds it) is the group's: worse than at baseline, it blames none of them (undecided,
  no culprit).

The baseline must pass `pytest-cluster verify` (its files as its manifest lists them) and
hold results.jsonl and inventory.json (accepted.py loads it). Pure comparisons: the cases
are emitted by derived_cases.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pytest_cluster.evidence.baseline.accepted import Baseline, figures
from pytest_cluster.evidence.baseline.hardware import asked_nodes, same_hardware, same_nodes
from pytest_cluster.evidence.baseline.performance import not_worse
from pytest_cluster.evidence.sinks.results import read_results

if TYPE_CHECKING:
    from pytest_cluster.contract.model import ClusterSpec
    from pytest_cluster.evidence.derived_cases import Case
    from pytest_cluster.measure.inventory_file import InventoryDocument


def compare(baseline: Baseline, inventory: InventoryDocument, results: Path,
            tolerance: float, cluster: ClusterSpec | None = None,
            checked: frozenset[str] | None = None) -> list[Case]:
    """Every derived case of this run against `baseline`: nodes (of `cluster`'s, those this
    run checks: `checked`, the nodes its selection kept a check of), hardware per node
    checked, and each figure measured in both runs."""
    done = read_results(results) if results.is_file() else None
    now = figures(done.results) if done is not None else {}
    spec = str(done.run.get("spec_sha256", "")) if done is not None else ""
    return [same_nodes(baseline, inventory, cluster, checked),
            *same_hardware(baseline, inventory, asked_nodes(cluster, checked)),
            *not_worse(baseline, now, tolerance, spec)]

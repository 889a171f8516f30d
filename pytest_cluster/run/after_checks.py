"""What a run takes once every check has run: inventory.json (written, and rendered for the
report at once: a thousand nodes' inventory is not held to the end of the run), and the
cases of the comparison with an accepted baseline (--cluster-baseline).

Neither may cost the checks their evidence: a failure is said, not raised.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_cluster.errors import clip
from pytest_cluster.evidence.baseline.compare import compare
from pytest_cluster.evidence.derived_cases import Case
from pytest_cluster.measure import inventory
from pytest_cluster.measure.cluster import Cluster
from pytest_cluster.report.sections import inventory_html

if TYPE_CHECKING:
    from pytest_cluster.contract import ClusterSpec, Spec
    from pytest_cluster.evidence.baseline.accepted import Baseline
    from pytest_cluster.launchers import Launcher
    from pytest_cluster.measure.inventory_file import InventoryDocument


@dataclass
class AfterChecks:
    """The inventory as the report shows it (or why it could not be taken), and the
    baseline's cases."""

    inventory_html: str = ""
    inventory_error: str = ""
    baseline_cases: list[Case] = field(default_factory=list)

    def take_inventory(self, spec: Spec, cache_dir: Path, launcher: Launcher, run_dir: Path,
                       may_probe: bool) -> InventoryDocument | None:
        """inventory.json written into `run_dir` (None: it could not be; why is kept).
        Without `may_probe` (after Ctrl-C) it holds what was already probed."""
        try:
            taken = inventory.take(Cluster(spec, cache_dir, launcher), may_probe)
            inventory.write(run_dir, taken)
        except Exception as exc:  # the checks' evidence matters more: said, not raised
            self.inventory_error = f"{type(exc).__name__}: {exc}"
            self.inventory_html = inventory_html(None, self.inventory_error)
            return None
        self.inventory_html = inventory_html(taken)
        return taken

    def compare_with_baseline(self, accepted: Baseline, taken: InventoryDocument,
                              results: Path, tolerance: float,
                              cluster: ClusterSpec | None = None,
                              checked: frozenset[str] | None = None) -> list[Case]:
        """The cases of this run (`taken`, its `results` file; `cluster`: the nodes it was
        asked to check, `checked`: those its selection kept a check of) against the
        accepted one."""
        try:
            self.baseline_cases = compare(accepted, taken, results, tolerance, cluster,
                                          checked)
        except Exception as exc:  # a baseline verify passes can still hold odd values
            self.baseline_cases = [Case("cluster", "baseline.nodes", "all", False,
                                        f"the baseline {accepted.path} could not be compared:"
                                        f" {type(exc).__name__}: {clip(str(exc))}")]
        return self.baseline_cases

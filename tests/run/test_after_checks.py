"""What a run takes once every check has run (inventory.json, the baseline's cases) may
not cost the checks their evidence: a failure is said, never raised."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, cast

from pytest_cluster.contract import parse_spec
from pytest_cluster.launchers.sim import SimLauncher
from pytest_cluster.measure.inventory_file import INVENTORY
from pytest_cluster.run.after_checks import AfterChecks

if TYPE_CHECKING:
    from pytest_cluster.evidence.baseline.accepted import Baseline
    from pytest_cluster.measure.inventory_file import InventoryDocument

SPEC = "cluster: {name: after, nodes: 'n[1-2]', launcher: sim}\ngpus: {count: 8}\nsim: {}\n"


def test_the_inventory_is_written_and_rendered_at_once(tmp_path: Path) -> None:
    spec = parse_spec(SPEC, "trial.yaml")
    after = AfterChecks()
    taken = after.take_inventory(spec, tmp_path / "cache", SimLauncher.from_spec(spec),
                                 tmp_path, may_probe=True)
    assert taken is not None and set(taken["nodes"]) == set(spec.cluster.nodes)
    written = (tmp_path / INVENTORY).read_text(encoding="utf-8")
    assert set(json.loads(written)["nodes"]) == set(spec.cluster.nodes)
    assert after.inventory_error == "" and all(n in after.inventory_html
                                               for n in spec.cluster.nodes)


def test_an_inventory_that_cannot_be_written_is_said_not_raised(tmp_path: Path) -> None:
    spec = parse_spec(SPEC, "trial.yaml")
    (tmp_path / INVENTORY).write_text("there already", encoding="utf-8")  # written with "x"
    after = AfterChecks()
    assert after.take_inventory(spec, tmp_path / "cache", SimLauncher.from_spec(spec),
                                tmp_path, may_probe=True) is None
    assert after.inventory_error.startswith("FileExistsError: ")
    assert "FileExistsError" in after.inventory_html  # the report says why


def test_a_baseline_that_cannot_be_compared_is_one_failed_case(tmp_path: Path) -> None:
    """A baseline verify passed can still hold odd values: the comparison's failure is a
    failed baseline.nodes case naming it, not an error after every check ran."""
    odd = cast("Baseline", SimpleNamespace(path=tmp_path / "old"))  # no inventory in it
    after = AfterChecks()
    cases = after.compare_with_baseline(odd, cast("InventoryDocument", {"nodes": {}}),
                                        tmp_path / "results.jsonl", 0.05)
    (case,) = cases
    assert (case.clause, case.node, case.passed) == ("baseline.nodes", "all", False)
    assert case.message.startswith(f"the baseline {tmp_path / 'old'} could not be compared: ")
    assert after.baseline_cases == cases

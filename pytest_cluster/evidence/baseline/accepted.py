"""The accepted run a baseline is (--cluster-baseline=DIR): loaded once it passes
`pytest-cluster verify` (its files as its manifest lists them; with
--cluster-baseline-key, signed by that key) and holds results.jsonl and inventory.json
within what the spec allows (files.py); its numeric figures by case id, how its signature
stood, and what makes it a weaker one to compare with.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from pytest_cluster.errors import BundleError, InputError, printable
from pytest_cluster.evidence.baseline import files as baseline_files
from pytest_cluster.evidence.baseline.files import MAX_GPUS, RESULTS, Limits
from pytest_cluster.evidence.bundle.keys import PublicKey
from pytest_cluster.evidence.bundle.verify import verify
from pytest_cluster.measure.inventory_file import INVENTORY, InventoryDocument, is_unreadable
from pytest_cluster.units import utc

if TYPE_CHECKING:
    from pytest_cluster.contract.model import Spec
    from pytest_cluster.evidence.baseline.replacements import Accepted
    from pytest_cluster.evidence.sinks.results import ResultLine

HIGHER_BETTER = (">=", ">")
LOWER_BETTER = ("<=", "<")
#: The fields of a case's line, beside its node and GPU, that tell it apart from its
#: node's other cases of the same clause (metrics' CASE_LABELS): a case derived from it (a
#: comparison with a baseline, a soak's steadiness) carries them as its own.
PARTS = ("filesystem", "collective", "payload", "node_count", "rail")
#: What a numeric result line needs to be compared: its case, node, GPU, what tells it
#: apart, its figure.
KEPT = ("case", "clause", "node", "gpu", *PARTS, "measured", "measured_base", "unit",
        "comparison", "basis", "basis_nodes", "basis_gpus", "bounded_by")


def parts(record: ResultLine) -> dict[str, Any]:
    """What tells `record` apart from its node's other cases of its clause (PARTS)."""
    return {key: value for key in PARTS if (value := record.get(key)) is not None}


MAX_SHOWN = 300  # characters of a value a change shows


def shown(value: Any) -> str:
    """A value as a change names it: cut to MAX_SHOWN characters, and what a terminal
    would act on (an ESC, a bidi override) escaped, since the baseline is untrusted."""
    text = f"unreadable ({value['unreadable']})" if is_unreadable(value) else str(value)
    return printable(text if len(text) <= MAX_SHOWN else text[:MAX_SHOWN] + "…")


#: How a baseline's signature stood when this run took it: checked against the
#: --cluster-baseline-key given (a signature that fails makes it no baseline), signed but
#: not checked (no key given), unsigned.
VERIFIED, NOT_CHECKED, UNSIGNED = "verified", "not_checked", "unsigned"
SIGNATURES = (VERIFIED, NOT_CHECKED, UNSIGNED)


def signature_said(signature: str, key: str | None) -> str:
    """The terminal's words for it: 'signature verified with SHA256:...', 'signature not
    checked: no --cluster-baseline-key', 'unsigned: no signature to check'."""
    if signature == VERIFIED:
        return f"signature verified with {key}"
    if signature == UNSIGNED:
        return "unsigned: no signature to check"
    return "signature not checked: no --cluster-baseline-key"


class BaselineError(Exception):
    """The baseline directory cannot serve as one (says which file and why)."""


@dataclass(frozen=True)
class Baseline:
    path: Path
    started: str  # when the baseline run started, as units.utc writes it
    signed_by: tuple[str, ...]
    manifest_sha256: str
    inventory: InventoryDocument
    figures: dict[str, ResultLine]  # numeric result lines by case id (their KEPT keys)
    checked_key: str | None = None  # the key its signature was checked against, if one
    cluster: str = ""
    spec_sha256: str = ""
    status: str = ""  # how the baseline run ended: complete, partial, interrupted
    #: the replaced parts this run accepts against it (--cluster-baseline-accept)
    accept: tuple[Accepted, ...] = ()

    def notes(self, spec: Spec) -> list[str]:
        """What makes this baseline a weaker one to compare with, in words."""
        found = []
        if self.cluster and self.cluster != spec.cluster.name:
            found.append(f"it is of cluster {shown(self.cluster)}, this run of "
                         f"{spec.cluster.name}")
        if self.spec_sha256 and self.spec_sha256 != spec.sha256:
            found.append("its spec differs from this run's (sha256 "
                         f"{shown(self.spec_sha256[:12])} vs {spec.sha256[:12]}): only the cases "
                         "both have are compared")
        if self.status and self.status != "complete":
            found.append(f"it ran {shown(self.status)}: figures it did not measure have nothing "
                         "to compare with")
        return found

    @property
    def label(self) -> str:
        return f"run {self.started}"

    @property
    def signature(self) -> str:
        """VERIFIED (by the key given: load refuses one whose signature fails),
        NOT_CHECKED (its manifest names signers; no key was given) or UNSIGNED."""
        if self.checked_key is not None:
            return VERIFIED
        return NOT_CHECKED if self.signed_by else UNSIGNED


def figures(records: Iterable[ResultLine]) -> dict[str, ResultLine]:
    """The result lines with a number compared one way (>=, <=), by case id."""
    found = {}
    for record in records:
        base = record.get("measured_base")
        if (isinstance(record.get("case"), str) and record.get("comparison") in
                HIGHER_BETTER + LOWER_BETTER and isinstance(base, (int, float))
                and not isinstance(base, bool) and math.isfinite(base)
                and record.get("outcome") in ("passed", "failed")):
            found[record["case"]] = cast("ResultLine", {key: record.get(key) for key in KEPT})
    return found


def limits(spec: Spec) -> Limits:
    """What `spec` lets a baseline hold: the nodes of the whole cluster (a run of some of
    them compares with a baseline of all), GPUs per node from gpus.count (exact, or at
    most), else the sim's gpus_per_node, else the most a spec may name."""
    whole = spec.whole or spec
    nodes = len(whole.cluster.nodes)
    count = whole.gpus.clause("count") if whole.gpus is not None else None
    if count is not None and count.requirement.op in ("==", "<="):
        most = int(count.requirement.bound.value)
        said = count.requirement.text if count.requirement.op == "<=" else str(most)
        return Limits(nodes, most, f"the spec's gpus.count ({said})")
    if whole.sim is not None and count is None:
        return Limits(nodes, whole.sim.gpus_per_node,
                      f"the spec's sim.gpus_per_node ({whole.sim.gpus_per_node})")
    return Limits(nodes, MAX_GPUS, f"the most a spec may name ({MAX_GPUS})")


def load(path: Path, key: Path | None = None, bounds: Limits = baseline_files.ANY_SPEC) -> Baseline:
    """The baseline at `path`, verified (with `key`: signed by that key) and its files
    checked against `bounds` (what the spec allows: files.py); BaselineError
    saying why it cannot be one."""
    try:
        baseline_files.check_sizes(path, bounds)
        verdict = verify(path, PublicKey.load(key) if key is not None else None)
    except (BundleError, InputError) as exc:
        raise BaselineError(str(exc)) from None
    if not verdict.ok:
        problems = "; ".join(verdict.problems())
        raise BaselineError(f"it fails pytest-cluster verify, so it is no evidence of what "
                            f"was accepted: {problems}")
    missing = [name for name in (RESULTS, INVENTORY) if not (path / name).is_file()]
    if missing:
        raise BaselineError(f"it has no {' or '.join(missing)}: a run's evidence directory "
                            "written by a pytest-cluster that records its inventory is needed")
    try:
        results = baseline_files.read_results(path / RESULTS, bounds)
        inventory = baseline_files.read_inventory(path / INVENTORY, bounds)
    except InputError as exc:
        raise BaselineError(str(exc)) from None
    started = results.run.get("started_at")
    return Baseline(path, utc(started) if started is not None else "of unknown time",
                    tuple(verdict.signed_by), verdict.manifest_sha256, inventory,
                    figures(results.results), verdict.key, results.run.get("cluster", ""),
                    results.run.get("spec_sha256", ""), results.status)

"""The spec's `baseline:` and `soak:` sections: shares below 100% saying how much worse than
the baseline, or how unsteady over a soak, a figure may be."""

from __future__ import annotations

from typing import TYPE_CHECKING

from yaml.nodes import Node

from pytest_cluster.contract.clauses import keys
from pytest_cluster.contract.model import (
    BaselineSpec,
    SoakSpec,
)
from pytest_cluster.contract.reading.fields import field, or_default
from pytest_cluster.contract.reading.mapping import section_map
from pytest_cluster.errors import UnitError
from pytest_cluster.units import Dim, parse_quantity

if TYPE_CHECKING:
    from pytest_cluster.contract.reading.located_errors import Ctx


def _below_one(raw: object) -> float:
    value = parse_quantity(raw, Dim.FRACTION).value
    if value >= 1:
        raise UnitError(f"expected a share below 100% like '5%', got {raw!r}")
    return value


def _shares(ctx: Ctx, node: Node | None, section: str) -> tuple[dict[str, float | None], int]:
    """A section of shares below 100% (its declared keys), each None when left out, and
    the line it starts at (0: the spec leaves it out)."""
    table = section_map(ctx, node, section)
    if table is None or node is None:
        return {}, 0
    found = {key: field(ctx, table.take(key), f"{section}.{key}", _below_one)
             for key in keys(section)}
    table.finish()
    return found, node.start_mark.line + 1


def parse_baseline(ctx: Ctx, node: Node | None) -> BaselineSpec:
    """`baseline: {tolerance: 5%}`: how much worse than the baseline run a figure may be."""
    found, line = _shares(ctx, node, "baseline")
    if not line:
        return BaselineSpec()
    return BaselineSpec(or_default(found["tolerance"], 0.05), line)


def parse_soak(ctx: Ctx, node: Node | None) -> SoakSpec:
    """`soak: {spread: 5%, drop: 10%}`: how steady a soak's figures must stay."""
    found, line = _shares(ctx, node, "soak")
    if not line:
        return SoakSpec()
    return SoakSpec(or_default(found["spread"], 0.05), or_default(found["drop"], 0.10), line)

"""The spec's clauses parsed as their declarations say (contract/clauses.py): a quantity of
the declared dimension with its comparison, a share or a quantity, a health rule, a flag,
each section's promises (a default where the spec leaves one out); and the slips a value
warns of (a NIC's rate in bytes faster than any NIC: bits meant)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from yaml.nodes import Node

from pytest_cluster.contract.clauses import clauses
from pytest_cluster.contract.declaration import Declaration, Value
from pytest_cluster.contract.model import Clause, Rule
from pytest_cluster.contract.reading.fields import boolean, field
from pytest_cluster.contract.requirement import Requirement, parse_requirement
from pytest_cluster.errors import UnitError
from pytest_cluster.units import UNITS, Dim, Quantity, format_value, parse_quantity

if TYPE_CHECKING:
    from pytest_cluster.contract.reading.located_errors import Ctx
    from pytest_cluster.contract.reading.mapping import Map


def respelled(quantity: Quantity, unit: str) -> Quantity | None:
    """The number as written, in another unit: 400 GB/s -> 400 Gb/s (None if `unit` is not
    a unit of the same kind)."""
    if UNITS.get(unit, (None, 0.0))[0] is not quantity.dim or quantity.unit not in UNITS:
        return None
    number = quantity.value / UNITS[quantity.unit][1]
    return Quantity(number * UNITS[unit][1], quantity.dim, unit)


#: The fastest NIC there is, in bytes/s (1.6 Tb/s); a link rate above it is likely bytes
#: written for bits (400 GB/s for 400 Gb/s).
MAX_NIC_RATE = 200e9


def slips(ctx: Ctx, line: int, path: str, declaration: Declaration,
          quantity: Quantity) -> None:
    """Warn of what the declaration says is a likely slip in a value written as it declares:
    a NIC's or link's rate (`link`) faster than any NIC, likely bytes written for bits.
    Every parse of a declared quantity comes here (`clause`, `as_declared`)."""
    if not declaration.link or quantity.dim is not Dim.RATE or quantity.value <= MAX_NIC_RATE:
        return
    bits = quantity.unit.replace("i", "").replace("B", "b")
    meant = respelled(quantity, bits) if bits != quantity.unit else None
    hint = f"; did you mean {meant}?" if meant is not None else ""
    ctx.warn(line, path, f"{quantity} is {format_value(quantity.value, Dim.RATE, 'Tb/s')} "
             f"per NIC, faster than any NIC ({format_value(MAX_NIC_RATE, Dim.RATE, 'Tb/s')} "
             f"at most){hint}")


def as_declared(ctx: Ctx, node: Node | None, path: str,
                declaration: Declaration) -> Quantity | None:
    """A quantity (no comparison) written at `path` as `declaration` says: of its dim, with
    the slips it warns of; None if absent or wrong (said)."""
    dim = declaration.dim
    assert dim is not None, declaration.id
    quantity = field(ctx, node, path, lambda raw: parse_quantity(raw, dim))
    if quantity is not None and node is not None:
        slips(ctx, node.start_mark.line + 1, path, declaration, quantity)
    return quantity


def clause(ctx: Ctx, table: Map, declaration: Declaration, where: str | None = None,
           member: str | None = None) -> Clause | None:
    """A clause written as `declaration` says (a comparison and a quantity of its dim), named
    as its instance (`where`: the filesystem; `member`: e.g. the dtype); None if absent."""
    key = member or declaration.key
    node = table.take(key)
    dim, op = declaration.dim, declaration.op
    assert dim is not None, declaration.id
    req: Requirement | None = field(ctx, node, table.sub(key),
                                     lambda raw: parse_requirement(raw, dim, op))
    if req is None or node is None:
        return None
    slips(ctx, node.start_mark.line + 1, table.sub(key), declaration, req.bound)
    return written(ctx, node, table.sub(key), declaration.name(where, member), req)


def written(ctx: Ctx, node: Node, path: str, key: str, req: Requirement) -> Clause:
    """The clause `key` the spec wrote at `node` (`path`), or its profile did: then at line
    0 (not in the spec), with the profile's citation (Clause.source)."""
    source = ctx.cited(node, path)
    return Clause(key, 0 if source else node.start_mark.line + 1, req, source)


def default(declaration: Declaration, where: str | None = None) -> Clause | None:
    """What a declared clause requires when the spec leaves it out (None: nothing)."""
    if declaration.default is None or declaration.dim is None:
        return None
    return Clause(declaration.name(where), 0,
                  parse_requirement(declaration.default, declaration.dim, declaration.op))


def share_or(ctx: Ctx, table: Map, key: str, name: str, dim: Dim,
             expected: str) -> Clause | None:
    """A clause written as a share ('>= 95%', 0.95) or as a quantity of `dim`; `expected`
    says both in words for the error ("a share of total like '95%' or a size like ...")."""
    node = table.take(name)
    if node is None:
        return None

    def parse(raw: object) -> Clause:
        if (isinstance(raw, str) and raw.rstrip().endswith("%")) or isinstance(raw, float):
            req = parse_requirement(raw, Dim.FRACTION)
        else:
            try:
                req = parse_requirement(raw, dim)
            except UnitError:
                raise UnitError(f"expected {expected}, got {raw!r}") from None
        return written(ctx, node, table.sub(name), f"{key}.{name}", req)

    return field(ctx, node, table.sub(name), parse)


def rule(ctx: Ctx, table: Map, declaration: Declaration) -> Rule | None:
    """A health rule: on (its line 0) unless the spec says false; the words that keep it
    on are the declaration's."""
    node = table.take(declaration.key)
    if node is None:
        return Rule(declaration.id, 0, declaration.text)
    words = declaration.on

    def parse(raw: object) -> bool:
        if raw is False:
            return False
        if raw in words:
            return True
        shown = " or ".join(repr(w) if isinstance(w, str) else "true" for w in words)
        raise UnitError(f"expected {shown} (the default), or false to leave it out, got {raw!r}")

    on = field(ctx, node, declaration.id, parse)
    if on is False:
        whose = ctx.cited(node, table.sub(declaration.key))
        ctx.off[declaration.id] = f"{declaration.key}: false" + (
            f" in profile {ctx.profile.name}" if whose and ctx.profile is not None else "")
    return written_rule(ctx, node, table.sub(declaration.key), declaration.id,
                        declaration.text) if on else None


def written_rule(ctx: Ctx, node: Node, path: str, key: str, text: str) -> Rule:
    """The rule `key` the spec wrote at `node` (`path`), or its profile did (as `written`)."""
    source = ctx.cited(node, path)
    return Rule(key, 0 if source else node.start_mark.line + 1, text, source)


def flag(ctx: Ctx, table: Map, declaration: Declaration,
         where: str | None = None) -> tuple[bool | None, Rule | None]:
    """A promise switched by true or false: the value (None if absent) and, when true, the
    rule it promises."""
    node = table.take(declaration.key)
    on = field(ctx, node, table.sub(declaration.key), boolean)
    if not on or node is None:
        return on, None
    return on, written_rule(ctx, node, table.sub(declaration.key), declaration.name(where),
                            declaration.text)


def promises(ctx: Ctx, table: Map, section: str, where: str | None = None,
             skip: tuple[str, ...] = ()) -> tuple[Clause | Rule, ...]:
    """The section's clauses that are quantities, shares or rules, parsed as declared (a
    default where the spec leaves one out); the others (`skip`, versions, flags, members)
    are the section parser's."""
    found: list[Clause | Rule | None] = []
    for declaration in clauses(section):
        if declaration.key in skip or declaration.within:  # a map's: its parser's
            continue
        if declaration.value is Value.QUANTITY:
            found.append(clause(ctx, table, declaration, where)
                         or default(declaration, where))
        elif declaration.value is Value.SHARE:
            assert declaration.dim is not None
            prefix = section if where is None else f"{section}[{where}]"
            found.append(share_or(ctx, table, prefix, declaration.key, declaration.dim,
                                  declaration.expected))
        elif declaration.value is Value.RULE:
            found.append(rule(ctx, table, declaration))
    return tuple(item for item in found if item is not None)

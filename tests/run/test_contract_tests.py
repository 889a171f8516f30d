"""The acceptance suite's tests made from the clause declarations: `checks` marks a
declared clause only, `table_tests` makes one test per table clause of a section, named as
users know it, and `reading` takes the declared field of a node's (untrusted) answer or
says why it cannot."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, NoReturn, cast

import pytest

from pytest_cluster.contract.clauses import CLAUSES, clauses
from pytest_cluster.run.contract_tests import checks, reading, table_tests

if TYPE_CHECKING:
    from pytest_cluster.contract.declaration import Declaration
    from pytest_cluster.contract.model import Clause
    from pytest_cluster.evidence.record.check import Evidence


class CannotMeasure(Exception):
    pass


class Saying:
    """An Evidence that only records why a clause cannot be measured (and ends the test
    there, as the real one fails it)."""

    def cannot_measure(self, clause: object, reason: str, *, raw: Any = None,
                       kind: str = "cannot_measure", node: str | None = None) -> NoReturn:
        raise CannotMeasure(kind, reason)


TABLE = next(d for d in CLAUSES if d.table)
CLAUSE = cast("Clause", object())


def said(payload: dict[str, Any]) -> tuple[str, str]:
    with pytest.raises(CannotMeasure) as caught:
        reading(cast("Evidence", Saying()), TABLE, CLAUSE, payload)
    kind, reason = caught.value.args
    return kind, reason


def test_checks_marks_a_declared_clause_and_refuses_any_other() -> None:
    mark = checks(TABLE.id).mark
    assert (mark.name, mark.args) == ("clause", (TABLE.id,))
    with pytest.raises(KeyError):
        checks("no_such_section.no_such_clause")


@pytest.mark.parametrize("section", sorted({d.section for d in CLAUSES if d.table}))
def test_a_section_has_one_test_per_table_clause_named_as_users_know_it(section: str) -> None:
    made: list[Declaration] = []

    def make(declaration: Declaration) -> Any:
        made.append(declaration)
        return lambda: None

    tests = dict(table_tests(section, make))
    table = [d for d in clauses(section) if d.table]
    assert made == table and list(tests) == [d.test for d in table]
    for declaration in table:
        test = tests[declaration.test]
        assert test.__name__ == declaration.test
        assert [m.args for m in getattr(test, "pytestmark", [])] == [(declaration.id,)]


def test_the_declared_field_is_read_from_its_part() -> None:
    reads = TABLE.reads
    assert reads is not None
    part = {reads.field: 7}
    assert reading(cast("Evidence", Saying()), TABLE, CLAUSE, {reads.part: part}) == (7, part)


def test_an_answer_without_the_figure_says_why_it_cannot_be_measured() -> None:
    reads = TABLE.reads
    assert reads is not None
    assert said({"error": "no NVML"}) == ("cannot_measure", "no NVML")
    assert said({reads.part: {"error": "denied"}}) == ("cannot_measure", "denied")
    assert said({}) == ("cannot_measure", f"the probe returned no {reads.part} result")
    assert said({reads.part: {"other": 1}}) == (
        "cannot_measure", f"the {reads.probe} probe found no {reads.part} {reads.field}")


@pytest.mark.parametrize("value", [True, math.nan, "12", [1]])
def test_a_figure_that_is_no_finite_number_is_bad_output(value: object) -> None:
    reads = TABLE.reads
    assert reads is not None
    kind, reason = said({reads.part: {reads.field: value}})
    assert kind == "bad_output"
    assert reason.startswith(f"the {reads.probe} probe's {reads.part}.{reads.field} is not "
                             "a finite number: ")


def test_a_part_that_is_no_section_is_bad_output() -> None:
    reads = TABLE.reads
    assert reads is not None
    assert said({reads.part: [1, 2]})[0] == "bad_output"

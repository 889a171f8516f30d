"""contract/sections/tolerances.py: the `baseline:` and `soak:` sections, shares below 100%."""

from __future__ import annotations

import pytest

from pytest_cluster.contract.clauses import keys
from pytest_cluster.contract.model import BaselineSpec, SoakSpec
from pytest_cluster.contract.reading.compose import compose
from pytest_cluster.contract.reading.located_errors import Ctx
from pytest_cluster.contract.sections.tolerances import parse_baseline, parse_soak

PARSERS = {"baseline": parse_baseline, "soak": parse_soak}


def parsed(section: str, text: str | None) -> tuple[object, list[str]]:
    ctx = Ctx("t.yaml")
    record = PARSERS[section](ctx, None if text is None else compose(text, "t.yaml"))
    return record, [str(error) for error in ctx.errors]


def test_left_out_each_is_its_default_at_line_0() -> None:
    assert parsed("baseline", None) == (BaselineSpec(), [])
    assert parsed("soak", None) == (SoakSpec(), [])
    assert BaselineSpec().line == SoakSpec().line == 0


def test_what_is_written_is_read_and_the_rest_defaulted() -> None:
    assert parsed("baseline", "\n{tolerance: 2%}") == (BaselineSpec(0.02, 2), [])
    assert parsed("soak", "{spread: 2%}") == (SoakSpec(0.02, SoakSpec().drop, 1), [])
    assert parsed("soak", "{drop: 0.25}") == (SoakSpec(SoakSpec().spread, 0.25, 1), [])


@pytest.mark.parametrize("section", sorted(PARSERS))
@pytest.mark.parametrize(("written", "shown"), [("100%", "'100%'"), ("100.0%", "'100.0%'"),
                                                ("1.0", "1.0"), ("1", "1")])
def test_a_share_of_100_percent_or_more_is_refused_at_each_key(
        section: str, written: str, shown: str) -> None:
    for key in keys(section):
        _, errors = parsed(section, f"{{{key}: {written}}}")
        assert errors == [f"t.yaml:1: {section}.{key}: expected a share below 100% like "
                          f"'5%', got {shown}"]


@pytest.mark.parametrize("section", sorted(PARSERS))
def test_a_key_the_section_does_not_declare_is_unknown(section: str) -> None:
    _, errors = parsed(section, "{tolerence: 5%}")
    assert len(errors) == 1 and errors[0].startswith(f"t.yaml:1: {section}.tolerence: "
                                                     "unknown key")

"""The result line: its raw part serialised once (by Evidence), put into results.jsonl as
that text, in its sorted place, byte for byte what serialising the whole line gives, as
strict JSON (a number that is not finite written as its text); the
clause a line is about, read in one place."""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from pytest_cluster.evidence.record.check import raw_text
from pytest_cluster.evidence.sinks.results import _Line, clause_of, line_text, strict_json


def _refuse(name: str) -> None:
    raise ValueError(f"{name} is no strict JSON")

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8)
    | st.floats(allow_nan=True, allow_infinity=True),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner,
                                                                max_size=4),
    max_leaves=20)
KEYS = st.sampled_from(["case", "clause", "measured", "node", "outcome", "phase", "probe",
                        "r", "ra", "raw_", "rax", "required", "spec_key", "type", "zz", "A"])


@given(st.dictionaries(KEYS, JSON, max_size=10), JSON)
def test_a_raw_serialised_once_is_written_as_a_whole_line_would_be(
        fields: dict[str, Any], raw: Any) -> None:
    text = raw_text(raw)  # as Evidence records it
    line = _Line({**fields, "raw": json.loads(text)})
    line.raw_text = text
    assert line_text(line) == strict_json(line)
    back = json.loads(line_text(line), parse_constant=_refuse)  # strict JSON, always
    assert set(back) == set(line)


def test_a_line_without_a_serialised_raw_is_plain_json() -> None:
    assert line_text({"b": 1, "raw": {"x": math.inf}, "a": "é"}) == (
        '{"a": "\\u00e9", "b": 1, "raw": {"x": "inf"}}')  # strict JSON: no Infinity
    only = _Line({"raw": [1]})
    only.raw_text = "[1]"
    assert line_text(only) == '{"raw": [1]}'


def test_the_clause_of_a_line_is_its_case_s_clause_else_its_key() -> None:
    assert clause_of({"clause": "storage.write", "spec_key": "storage[/d].write"}) == (
        "storage.write")
    assert clause_of({"spec_key": "mine.latency"}) == "mine.latency"
    assert clause_of({"clause": "", "spec_key": "mine.x"}) == "mine.x"


MINE = '''
def test_mine(record_property):
    record_property("spec_key", "mine.x")
    record_property("raw", '{"b": 1,\\n "a": [2, 3]}')  # valid JSON over two lines


def test_sorted(record_property):
    record_property("spec_key", "mine.y")
    record_property("raw", '{"a": 1}')
'''


def test_a_test_s_own_raw_stays_one_line_of_results_jsonl(pytester: Any) -> None:
    pytester.makepyfile(test_mine=MINE)
    (pytester.path / "t.yaml").write_text(
        'cluster: {name: lines, nodes: "n1", launcher: sim}\ngpus: {count: 8}\n'
        "sim: {gpus_per_node: 8}\n", encoding="utf-8")
    result = pytester.runpytest("--cluster=t.yaml", "-p", "no:cacheprovider",
                                "--cluster-reports=reports", "test_mine.py")
    result.assert_outcomes(passed=2)
    lines = next((pytester.path / "reports").glob("*-lines/results.jsonl")).read_text(
        encoding="utf-8").splitlines()
    mine = [json.loads(line) for line in lines if '"spec_key": "mine.' in line]
    assert [r["raw"] for r in mine] == [{"b": 1, "a": [2, 3]}, {"a": 1}]
    assert all(json.loads(line) for line in lines)  # every line whole


def _report(when: Any, outcome: Any, props: Any) -> Any:
    import pytest

    return pytest.TestReport("t.py::t", ("t.py", 0, "t"), {}, outcome, None, when,
                             user_properties=props)


def test_a_line_is_made_at_the_call_or_a_failed_setup_of_a_case_with_a_clause() -> None:
    from pytest_cluster.evidence.sinks.results import makes_line

    keyed = [("spec_key", "mine.x")]
    assert makes_line(_report("call", "passed", keyed))
    assert makes_line(_report("setup", "failed", keyed))
    assert not makes_line(_report("setup", "passed", keyed))
    assert not makes_line(_report("teardown", "passed", keyed))
    assert not makes_line(_report("call", "passed", [("other", 1)]))
    case = _report("setup", "failed", [])
    case.pytest_cluster_case = ("t.py::t", "gpus.count", "n1")
    assert makes_line(case)

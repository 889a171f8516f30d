"""Collection: the contract's parameters from the spec, each case's level and order from
its clause's declaration, what a crashed check of ours says of itself; a warning never
decides a check, and a check of ours that raises blames no node."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, cast

import pytest

from pytest_cluster.contract import parse_spec
from pytest_cluster.contract.clauses import CLAUSES
from pytest_cluster.contract.declaration import ACCEPTANCE, SANITY, STRESS
from pytest_cluster.evidence.record.check import Place
from pytest_cluster.evidence.record.plan import PlannedCase
from pytest_cluster.evidence.verdict.blame import TOOL_FAULT
from pytest_cluster.run.collection import (
    SUITE_PREFIX,
    level_of,
    runs_last,
    tool_fault_properties,
)
from tests.run.test_runs import SPEC, cases, lines, run, run_dirs

if TYPE_CHECKING:
    from collections.abc import Iterator

GPUS = """\
cluster: {name: params, nodes: [n1], launcher: sim}
gpus:
  count: 2
  matmul: {bf16: ">= 1 TFLOPS", fp16: ">= 1 TFLOPS"}
sim: {gpus_per_node: 2}
"""


class Marked:
    """An item as level_of reads it: its markers."""

    def __init__(self, *names: str) -> None:
        self.names = names

    def iter_markers(self) -> Iterator[pytest.Mark]:
        return (getattr(pytest.mark, name).mark for name in self.names)


def test_your_own_tests_are_parametrized_from_the_spec(pytester: pytest.Pytester) -> None:
    (pytester.path / "trial.yaml").write_text(GPUS, encoding="utf-8")
    spec = parse_spec(GPUS, "trial.yaml")
    assert spec.gpus is not None
    pytester.makepyfile(test_mine="def test_gpus(node, gpu, dtype):\n    pass\n")
    result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                                "--collect-only", "-q", "test_mine.py")
    ids = {line.partition("[")[2].rstrip("]") for line in result.outlines if "::" in line}
    assert ids == {f"{node}-gpu{slot}-{dtype}" for node in spec.cluster.nodes
                   for slot in range(spec.gpus.slots) for dtype, _ in spec.gpus.matmul}


def test_a_contract_case_has_its_clauses_level_and_order() -> None:
    for declaration in CLAUSES:
        marker = pytest.mark.clause(declaration.id).mark
        assert level_of(cast("pytest.Item", Marked()), marker) == declaration.level
        assert runs_last(marker) is declaration.last
    assert any(d.last for d in CLAUSES) and not runs_last(None)


def test_your_own_test_is_of_the_lowest_level_it_is_marked_with() -> None:
    own = pytest.mark.clause("mine.thing").mark  # a clause marker of your own
    assert level_of(cast("pytest.Item", Marked()), own) == ACCEPTANCE
    assert level_of(cast("pytest.Item", Marked(STRESS, SANITY)), own) == SANITY
    assert level_of(cast("pytest.Item", Marked(STRESS)), None) == STRESS
    assert not runs_last(own)


def test_a_crashed_check_says_what_it_is_about_less_what_it_said() -> None:
    spec = parse_spec(GPUS, "trial.yaml")
    place = Place.of({"gpu": 1, "payload": 1024})
    found = dict(tool_fault_properties(PlannedCase("acceptance/x.py::t", "gpus.count", None),
                                       place, spec, {"gpu"}))
    assert found == {"error_kind": TOOL_FAULT, "node": "cluster params", "payload": 1024,
                     "simulated": True}
    on_node = dict(tool_fault_properties(PlannedCase("acceptance/x.py::t", "gpus.count", "n1"),
                                         Place(), None, set()))
    assert on_node == {"error_kind": TOOL_FAULT, "node": "n1"}


def test_a_line_of_a_check_of_ours_names_its_case_in_the_suite(
        pytester: pytest.Pytester) -> None:
    run(pytester, "-k", "n1 and test_gpu_count")
    (line,) = [r for r in lines(run_dirs(pytester)[0]) if r["type"] == "result"]
    assert line["case"] == f"{SUITE_PREFIX}test_gpus.py::test_gpu_count[n1]"


WARNER = """\
import warnings

def pytest_runtest_call(item):
    warnings.warn(ResourceWarning("a file left open by someone's code"))
"""


BOOM = """\
def pytest_runtest_call(item):
    if item.nodeid.endswith("test_gpu_count[n2]"):
        raise RuntimeError("a bug of the tool's")
"""


def verdicts(pytester: pytest.Pytester) -> dict[str, str]:
    run_dir = run_dirs(pytester)[-1]
    found = json.loads((run_dir / "verdict.json").read_text(encoding="utf-8"))
    return {entry["node"]: entry["verdict"] for entry in found["nodes"]}


@pytest.mark.slow
def test_a_project_that_makes_warnings_errors_gets_the_same_verdicts(
        pytester: pytest.Pytester) -> None:
    """`filterwarnings = error` (a project's own setting, or -W error): a warning during
    a check of ours is shown, and judges nothing."""
    every = len(cases(pytester))  # collected before the project's setting is written
    pytester.makepyfile(warner=WARNER)
    pytester.syspathinsert()
    pytester.makeini("[pytest]\nfilterwarnings = error\n")
    (pytester.path / "trial.yaml").write_text(SPEC.format(faults=""), encoding="utf-8")
    # a process of its own: in this one pytest_cluster is imported already, which pytest
    # warns of (it cannot rewrite its asserts), an error too under filterwarnings = error
    result = pytester.runpytest_subprocess("--cluster=trial.yaml", "-p", "no:cacheprovider",
                                           "-p", "warner")
    result.assert_outcomes(passed=every, warnings=every)  # one a check
    result.stdout.fnmatch_lines(["*ResourceWarning: a file left open by someone's code"])
    assert verdicts(pytester) == dict.fromkeys(("n1", "n2", "n3"), "ACCEPTED")


@pytest.mark.slow
def test_a_check_of_ours_that_ends_with_an_exception_blames_no_node(
        pytester: pytest.Pytester) -> None:
    """Not a verdict (pytest.fail), a skip or an xfail: the tool's fault, `tool_fault` on its
    line; the node is NOT CHECKED (an ERROR to a gate), never REJECTED or drained."""
    pytester.makepyfile(boom=BOOM)
    pytester.syspathinsert()
    every = len(cases(pytester))
    result = run(pytester, "-p", "boom")
    result.assert_outcomes(passed=every - 1, failed=1)
    assert "DRAIN" not in result.stdout.str()
    assert verdicts(pytester) == {"n1": "ACCEPTED", "n2": "NOT CHECKED", "n3": "ACCEPTED"}
    (line,) = [record for record in lines(run_dirs(pytester)[0])
               if record.get("outcome") == "failed"]
    assert (line["node"], line["error_kind"]) == ("n2", "tool_fault")
    assert line["message"] == "[SIMULATED] RuntimeError: a bug of the tool's"  # a sim run

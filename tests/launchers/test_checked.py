"""launchers/checked.py: an extension's launcher guarded. What its `run` gives back is
checked per node (a usable answer is kept as it is; data that is not a map of finite
numbers is that node's bad output) and bounded in time; what it raises or never returns is
the controller's fault for every node asked, naming the extension. Answers of classes of
its own, and an installed extension: tests/contract/test_extensions.py."""

from __future__ import annotations

import importlib
import math
import threading
from collections.abc import Callable, Sequence

import pytest

from pytest_cluster.contract.model import ClusterSpec
from pytest_cluster.launchers import ErrorKind, Launcher, ProbeResult
from pytest_cluster.launchers.checked import checked, checked_results
from pytest_cluster.probes import ProbeCall

OWNER = "extension x (x 0.1)"
NODES = ("n1", "n2")
#: the module (the package's name `checked` is its function)
CHECKED = importlib.import_module("pytest_cluster.launchers.checked")
CALL = ProbeCall("host")


class Given(Launcher):
    """An extension's launcher: its `run` does what the test gives it."""

    name = "given"
    does: Callable[[Sequence[str]], object] = staticmethod(lambda nodes: {})

    def run(self, call: ProbeCall, nodes: Sequence[str],
            timeout_s: float) -> dict[str, ProbeResult]:
        """Its own docstring."""
        answer = type(self).does(nodes)
        return answer  # type: ignore[return-value]


def guarded_run(does: Callable[[Sequence[str]], object],
                timeout_s: float = 1.0) -> dict[str, ProbeResult]:
    cls = type("Given", (Given,), {"does": staticmethod(does)})
    launcher = checked(cls, OWNER)(ClusterSpec("t", NODES, "given", "python3", 60, 8))
    return launcher.run(CALL, NODES, timeout_s)


def said(results: dict[str, ProbeResult]) -> list[tuple[ErrorKind | None, str]]:
    return [(r.error, r.message) for r in results.values()]


def test_the_guarded_class_is_the_extensions_with_its_name_and_doc() -> None:
    guarded = checked(Given, OWNER)
    assert issubclass(guarded, Given) and guarded is not Given
    assert (guarded.__name__, guarded.__qualname__, guarded.__module__, guarded.__doc__) == (
        Given.__name__, Given.__qualname__, Given.__module__, Given.__doc__)


def test_a_usable_answer_is_kept_as_it_is() -> None:
    answer = {node: ProbeResult(node, "host", {"cpu": {"cores": 8, "load": [0.5, 1]}})
              for node in NODES}
    failed = ProbeResult("n2", "host", None, ErrorKind.UNREACHABLE, "no route")
    assert guarded_run(lambda nodes: answer) == answer
    kept = guarded_run(lambda nodes: {**answer, "n2": failed, "n3": answer["n1"]})
    assert kept == {"n1": answer["n1"], "n2": failed}  # only the nodes asked


def test_what_run_raises_is_the_controllers_fault_for_every_node_naming_it() -> None:
    def raises(nodes: Sequence[str]) -> object:
        raise OSError("the BMC refused")

    assert said(guarded_run(raises)) == [
        (ErrorKind.CONTROLLER, f"the launcher of {OWNER} raised OSError: the BMC refused")
    ] * len(NODES)


def test_a_run_that_never_returns_is_bounded_and_left_running(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(CHECKED, "GRACE_S", 0.1)
    release = threading.Event()
    try:
        results = guarded_run(lambda nodes: release.wait(60), timeout_s=0.1)
    finally:
        release.set()  # the thread left running ends
    assert said(results) == [
        (ErrorKind.CONTROLLER, f"the launcher of {OWNER} did not return within 0.2 s (the "
                               "time limit it was given and 0.1 s more): left running")
    ] * len(NODES)


@pytest.mark.parametrize(("data", "fault"), [
    (["not", "a", "map"], "its data is a list, not a map"),
    ({"gpus": [1.0, math.inf]}, "its data is not strict JSON (Out of range float values "
                                "are not JSON compliant"),
    ({"when": object()}, "its data is not strict JSON (Object of type object is not JSON "
                         "serializable)"),
])
def test_data_that_is_not_a_map_of_finite_numbers_is_the_nodes_bad_output(
        data: object, fault: str) -> None:
    good = ProbeResult("n1", "host", {"cpu": {"cores": 8}})
    answer = {"n1": good, "n2": ProbeResult("n2", "host", data)}  # type: ignore[arg-type]
    results = checked_results(OWNER, CALL, NODES, answer)
    assert results["n1"] is good
    bad = results["n2"]
    assert (bad.error, bad.data) == (ErrorKind.BAD_OUTPUT, None)
    assert bad.message.startswith(f"the launcher of {OWNER}: {fault}")

"""An installed extension's launcher, its answers checked: what its `run` gives back must be
one ProbeResult per node asked, each for that node and probe, its data a map of finite
numbers; where it is not (or `run` raises), each node concerned gets a result whose error
is the controller's (ErrorKind.CONTROLLER: a fault of the tool that ran the probe, which no
node's verdict is blamed for), its message naming the extension. Data that is not strict
JSON (a NaN) is the node's bad output (ErrorKind.BAD_OUTPUT), naming the extension too.

Its `run` is given the time limit it is asked to keep and GRACE_S more (it runs in a
thread of its own): one that has not returned by then (a sleep, a wait on a node that
never answers) is a controller fault for each node asked, where before the run waited for
it forever. The thread cannot be stopped: it is left running, a daemon (the process's exit
does not wait for it)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from pytest_cluster.contract import guarded
from pytest_cluster.contract.extensions import described, said
from pytest_cluster.launchers.result import ErrorKind, ProbeResult

if TYPE_CHECKING:
    from pytest_cluster.launchers.base import Launcher
    from pytest_cluster.probes import ProbeCall


def _finite(value: object) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    if isinstance(value, list | tuple):
        return all(_finite(v) for v in value)
    return True


def _data_fault(data: object) -> str | None:
    """What is wrong with a result's data (None: nothing): a map of strict JSON."""
    if data is None:
        return None
    if not isinstance(data, dict):
        return f"its data is a {said(type(data).__name__, 80)}, not a map"
    try:
        json.dumps(data, allow_nan=False)
    except Exception as exc:  # a map of its own class runs its code when read
        return f"its data is not strict JSON ({said(str(exc), 160)})"
    if not _finite(data):
        return "its data has a number that is not finite"
    return None


def checked_results(owner: str, call: ProbeCall, nodes: Sequence[str],
                    answer: object) -> dict[str, ProbeResult]:
    """One result per node of `nodes` from what an extension's launcher gave back."""

    def failed(node: str, why: str, kind: ErrorKind = ErrorKind.CONTROLLER) -> ProbeResult:
        return ProbeResult(node=node, probe=call.name, data=None, error=kind,
                           message=f"the launcher of {owner} {why}")

    if not isinstance(answer, Mapping):
        why = (f"returned a {said(type(answer).__name__, 80)}, not a map of node to "
               "ProbeResult")
        return {node: failed(node, why) for node in nodes}
    results: dict[str, ProbeResult] = {}
    for node in nodes:
        result = answer.get(node)
        if type(result) is not ProbeResult:  # a class of its own runs its code when read
            results[node] = failed(node, f"returned a {said(type(result).__name__, 80)} for "
                                         "this node, not a ProbeResult")
        elif result.node != node or result.probe != call.name:
            results[node] = failed(node, f"returned the result of {said(result.node, 80)}'s "
                                         f"{said(result.probe, 80)} probe for this node")
        else:
            fault = _data_fault(result.data)
            results[node] = result if fault is None else replace(
                result, data=None, error=ErrorKind.BAD_OUTPUT,
                message=f"the launcher of {owner}: {fault}")
    return results


#: How long past the time limit it was given an extension's launcher's `run` may take
#: before its nodes' results are the controller's fault (s)
GRACE_S = 5.0


def checked(cls: type[Launcher], owner: str) -> type[Launcher]:
    """`cls` (an extension's launcher) whose `run` is checked (checked_results) and
    bounded in time (GRACE_S)."""

    def run(self: Launcher, call: ProbeCall, nodes: Sequence[str],
            timeout_s: float) -> dict[str, ProbeResult]:
        limit_s = timeout_s + GRACE_S
        # what it returns is read in the thread too: a map or a result of its own class
        # runs its code when read
        results, failure = guarded.within(lambda: checked_results(
            owner, call, nodes, cls.run(self, call, nodes, timeout_s)), limit_s)
        if results is not None:
            return results
        why = (f"did not return within {limit_s:g} s (the time limit it was given and "
               f"{GRACE_S:g} s more): left running"
               if isinstance(failure, guarded.Overdue) or failure is None
               else f"raised {described(failure)}")
        return {node: ProbeResult(node=node, probe=call.name, data=None,
                                  error=ErrorKind.CONTROLLER,
                                  message=f"the launcher of {owner} {why}")
                for node in nodes}

    made: type[Launcher] = type(cls.__name__, (cls,), {
        "run": run, "__module__": cls.__module__, "__qualname__": cls.__qualname__,
        "__doc__": cls.__doc__})
    return made

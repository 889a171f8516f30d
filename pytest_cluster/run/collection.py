"""pytest hooks of collection: the contract's parameters (nodes, filesystems, GPUs, ...),
the checks of clauses the spec does not have left out (contract/promised.py decides, from
the declarations), and the plan of what this run set out to check (plan.py).

pytest-xdist workers write the plan into the run's probes/ folder; the controller reads it
and writes the evidence (see session.py).
"""

from __future__ import annotations

import contextlib
import functools
import re
import warnings
from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pytest_cluster.contract.clauses import declared
from pytest_cluster.contract.declaration import ACCEPTANCE, LEVELS, STRESS
from pytest_cluster.contract.levels import ladder_markers
from pytest_cluster.contract.promised import TOO_FEW_NODES, Promised, promised
from pytest_cluster.errors import ProbeFailed
from pytest_cluster.evidence.record.check import Place
from pytest_cluster.evidence.record.plan import (
    CASE_KEY,
    NOT_IN_CONTRACT,
    PLAN_KEY,
    LeftOut,
    Plan,
    PlannedCase,
    opt_in,
)
from pytest_cluster.evidence.record.summary import is_simulated
from pytest_cluster.evidence.sinks.results import carry_case
from pytest_cluster.evidence.verdict.blame import TOOL_FAULT
from pytest_cluster.evidence.verdict.faults import fault_properties
from pytest_cluster.run.stash import CACHE_DIR_KEY, SPEC_KEY
from pytest_cluster.run.suite import acceptance_dir
from pytest_cluster.units import size_id

if TYPE_CHECKING:
    from pytest_cluster.contract import Spec

#: Contract cases collected, before the selection (-k, -m, --lf) chose among them.
PLANNED_KEY = pytest.StashKey[Plan]()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    spec = metafunc.config.stash.get(SPEC_KEY, None)
    if spec is None:
        return
    names = metafunc.fixturenames
    # software first: its cases read [torch-node01], as they always have
    if "software" in names:
        versions = spec.host.software
        metafunc.parametrize("software", versions, ids=[c.name for c in versions])
    if "package" in names:
        packages = declared("host.same_software").members
        metafunc.parametrize("package", packages, ids=list(packages))
    if "node" in names:
        metafunc.parametrize("node", spec.cluster.nodes, ids=list(spec.cluster.nodes),
                             indirect=True)
    if "filesystem" in names:
        metafunc.parametrize("filesystem", spec.storage,
                             ids=[fs.path for fs in spec.storage], indirect=True)
    if spec.gpus is not None and "gpu" in names:
        slots = range(spec.gpus.slots)
        metafunc.parametrize("gpu", slots, ids=[f"gpu{i}" for i in slots], indirect=True)
    if spec.gpus is not None and "dtype" in names:
        dtypes = [name for name, _ in spec.gpus.matmul]
        metafunc.parametrize("dtype", dtypes, ids=dtypes, indirect=True)
    _interconnect_params(metafunc, spec)


def _interconnect_params(metafunc: pytest.Metafunc, spec: Spec) -> None:
    ic = spec.interconnect
    if ic is None:
        return
    names = metafunc.fixturenames
    if "collective" in names:
        metafunc.parametrize("collective", ic.collectives, ids=list(ic.collectives),
                             indirect=True)
    if "payload" in names:
        metafunc.parametrize("payload", ic.payloads, ids=[size_id(p) for p in ic.payloads],
                             indirect=True)
    if "node_count" in names:
        metafunc.parametrize("node_count", ic.node_counts,
                             ids=[f"{n}nodes" for n in ic.node_counts], indirect=True)


def level_of(item: pytest.Item, marker: pytest.Mark | None, spec: Spec | None = None) -> str:
    """The level of a contract case (its clause's declaration says, in `spec` where the
    value written decides it: gpus.dcgm_diag r3 is stress; `marker`: its clause marker),
    or of your own test (the lowest level it is marked with, `@pytest.mark.sanity`
    or `stress`; otherwise it is of the full acceptance suite)."""
    if marker is not None and marker.args:
        with contextlib.suppress(KeyError):  # your own clause marker: as your own test
            return declared(str(marker.args[0])).level_in(spec)
    marked = {mark.name for mark in item.iter_markers()}
    return next((level for level in LEVELS if level in marked), ACCEPTANCE)


def runs_last(marker: pytest.Mark | None) -> bool:
    """Whether a case's clause runs after every other case (its declaration's `last`)."""
    if marker is None or not marker.args:
        return False
    try:
        return declared(str(marker.args[0])).last
    except KeyError:  # your own clause marker
        return False


def checked(item: pytest.Item, spec: Spec, marker: pytest.Mark | None) -> Promised | None:
    """The clause an item checks (`marker`: its clause marker) and whether the spec has it
    (None: no clause marker)."""
    if marker is None or not marker.args:
        return None
    callspec = getattr(item, "callspec", None)
    return promised(spec, str(marker.args[0]), callspec.params if callspec is not None else {})


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Leave out the checks of clauses the contract does not have, and remember every
    contract case left (before -k, -m or --lf choose among them)."""
    spec = config.stash.get(SPEC_KEY, None)
    if spec is None:
        return
    keep: list[pytest.Item] = []
    last: list[pytest.Item] = []
    drop: list[pytest.Item] = []
    absent: list[LeftOut] = []
    suite = acceptance_dir()
    chosen = str(config.option.markexpr or "")
    stress = re.search(rf"\b{STRESS}\b", chosen) is not None
    for item in items:
        marker = item.get_closest_marker("clause")
        found = checked(item, spec, marker)
        if found is not None and not found.promised:
            drop.append(item)
            absent.append(LeftOut(found.name, found.kind or NOT_IN_CONTRACT, found.why))
            continue
        level = level_of(item, marker, spec)
        if level == STRESS and not stress:  # opt-in: only when -m names it
            drop.append(item)
            absent.append(opt_in(found.name if found else item.nodeid, STRESS))
            continue
        (last if runs_last(marker) else keep).append(item)
        if found is not None:
            item.stash[CASE_KEY] = contract_case(item, found.name, suite)
        if chosen:  # the ladder: a case is part of its level's run and every one above
            for name in ladder_markers(level):
                item.add_marker(name)
    keep += last  # what the run did to a node is read after every other case
    ic = spec.interconnect
    if ic is not None:
        absent.extend(LeftOut(f"interconnect.node_counts {n}", TOO_FEW_NODES,
                              f"the cluster has {len(spec.cluster.nodes)} nodes")
                      for n in ic.node_counts_dropped)
    config.stash[PLANNED_KEY] = Plan(
        tuple(item.stash[CASE_KEY] for item in keep if CASE_KEY in item.stash),
        left_out=tuple(sorted(set(absent))))
    if drop:
        config.hook.pytest_deselected(items=drop)
    if drop or last:
        items[:] = keep


def contract_case(item: pytest.Item, clause: str, suite: Path) -> PlannedCase:
    """The case an item checks, with an id that is the same whatever the working
    directory: 'acceptance/test_gpus.py::test_ecc_uncorrected[node01-gpu0]'."""
    case_id = item.nodeid
    with contextlib.suppress(ValueError):
        inner = item.nodeid.split("::", 1)[1]
        case_id = f"{_in_suite(item.path, suite)}::{inner}"
    callspec = getattr(item, "callspec", None)
    node = callspec.params.get("node") if callspec is not None else None
    return PlannedCase(case_id, clause, node if isinstance(node, str) else None)


#: Our suite's cases' ids begin so (contract_case); a test of your own's do not.
SUITE_PREFIX = "acceptance/"


@functools.lru_cache(maxsize=64)
def _in_suite(path: Path, suite: Path) -> str:
    """'acceptance/test_gpus.py' (ValueError outside the suite); asked once per file,
    not once per item."""
    return f"{SUITE_PREFIX}{path.relative_to(suite).as_posix()}"


def pytest_collection_finish(session: pytest.Session) -> None:
    """Write the plan (collected, selected) where the controller will read it. Not at
    the end: an interrupted worker still leaves it."""
    config = session.config
    planned = config.stash.get(PLANNED_KEY, None)
    if planned is None:
        return
    selected = frozenset(item.stash[CASE_KEY].case_id for item in session.items
                         if CASE_KEY in item.stash)
    if selected:  # a run that runs nothing leaves nothing behind
        plan = Plan(planned.cases, selected, planned.left_out)
        plan.write(config.stash[CACHE_DIR_KEY])
        config.stash[PLAN_KEY] = plan


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[
        None, object, object]:
    """A warning never decides a check of ours: under -W error or a project's
    `filterwarnings = error` it is shown (pytest's warnings summary), not made the check's
    error. Inside pytest's own catch of the item's warnings, which still records them; no
    mark on each of 100,000s of items."""
    case = item.stash.get(CASE_KEY, None)
    if case is None or not case.case_id.startswith(SUITE_PREFIX):
        return (yield)
    with warnings.catch_warnings():
        warnings.simplefilter("default")
        return (yield)


#: How a simulated case's message begins (evidence/record/check.py marks the others').
SIMULATED_MARK = "[SIMULATED] "

#: What our checks end with when they judge: a verdict (pytest.fail), a skip, an xfail,
#: a node's failed probe read as if it had answered (ProbeFailed says the node's failure).
JUDGED = (pytest.fail.Exception, pytest.skip.Exception, pytest.xfail.Exception, ProbeFailed)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[
        None, pytest.TestReport, pytest.TestReport]:
    """Every contract case's report says which case it is (pytest-xdist carries it).

    A check of our suite that ends with any other exception (a bug of ours, a warning made
    an error) judged nothing: it says `error_kind: tool_fault`, which fails no node, with
    what the case is about (tool_fault_properties), in its line and its JUnit case alike.
    A case that failed says its fault (code, action, actor: evidence/verdict/faults.py),
    in its line and its JUnit case alike."""
    report = yield
    case = item.stash.get(CASE_KEY, None)
    if case is not None:
        carry_case(report, case.to_json())
        if (call.excinfo is not None and not call.excinfo.errisinstance(JUDGED)
                and case.case_id.startswith(SUITE_PREFIX)
                and all(name != "error_kind" for name, _ in report.user_properties)):
            callspec = getattr(item, "callspec", None)
            added = tool_fault_properties(
                case, Place.of(callspec.params if callspec is not None else {}),
                item.config.stash.get(SPEC_KEY, None),
                {name for name, _ in report.user_properties})
            report.user_properties.extend(added)
            # JUnit writes the properties the item holds at its teardown
            item.user_properties.extend(added)
            crash = getattr(report.longrepr, "reprcrash", None)
            if ("simulated", True) in added and crash is not None \
                    and not crash.message.startswith(SIMULATED_MARK):
                # its message says so first in every view, as every simulated case's
                crash.message = f"{SIMULATED_MARK}{crash.message}"
        if report.failed:
            fault = fault_properties(case.clause, dict(report.user_properties))
            report.user_properties.extend(fault)
            item.user_properties.extend(fault)
    return report


def tool_fault_properties(case: PlannedCase, place: Place, spec: Spec | None,
                          said: set[str]) -> list[tuple[str, object]]:
    """What a check that crashed says of itself, less what it said before it crashed
    (`said`): error_kind tool_fault; the node it is about (a check of several nodes: the
    cluster, named), its filesystem and GPU, the parameters that tell it apart (payload,
    collective, node count: Place.apart); simulated in a simulated run, as every other
    case of the run says."""
    name = spec.cluster.name if spec is not None else ""
    found: list[tuple[str, object]] = [
        ("error_kind", TOOL_FAULT), ("node", case.node or f"cluster {name}".strip()),
        ("filesystem", place.filesystem), ("gpu", place.gpu), *place.apart,
        ("simulated", True if spec is not None and is_simulated(spec) else None)]
    return [(key, value) for key, value in found if value is not None and key not in said]

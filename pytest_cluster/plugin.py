"""pytest plumbing: options, spec validation at configure time, collection, reports.

With `--cluster=SPEC` and no test paths on the command line, pytest collects the
packaged contract suite (pytest_cluster.acceptance); with paths, it runs those (your own
tests may use our fixtures). pytest-xdist workers write only probe results and the plan
into the run's probes/ folder; the controller writes the evidence (see session.py).
"""

from __future__ import annotations

import contextlib
import importlib.util
import tempfile
import time
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from pytest_cluster.errors import SpecError
from pytest_cluster.plan import Case, Plan
from pytest_cluster.rundir import create_run_dir
from pytest_cluster.session import SESSION_PLUGIN, ClusterSession
from pytest_cluster.spec import Spec, StorageSpec, VersionClause, load_spec
from pytest_cluster.state import CACHE_DIR_KEY, CASE_KEY, PLANNED_KEY, SPEC_KEY
from pytest_cluster.units import size_id

pytest_plugins = ["pytest_cluster.fixtures"]


class SpecWarning(UserWarning):
    """A spec value that is valid but probably not what was meant (e.g. GB/s for Gb/s)."""


def acceptance_dir() -> Path:
    """Where the packaged contract suite lives (pytest_cluster.acceptance); in a source
    checkout whose pytest_cluster/ comes first on sys.path (`python -m pytest` in the
    repository), the acceptance/ folder beside it."""
    spec = importlib.util.find_spec("pytest_cluster.acceptance")
    if spec is not None and spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations)))
    beside = Path(__file__).resolve().parent.parent / "acceptance"
    if (beside / "test_gpus.py").is_file():
        return beside
    raise pytest.UsageError(  # pragma: no cover - packaging bug
        f"pytest-cluster is installed without its acceptance suite (looked for the "
        f"package pytest_cluster.acceptance and for {beside})")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("cluster", "pytest-cluster: contract acceptance tests")
    group.addoption(
        "--cluster", metavar="SPEC", default=None,
        help="contract spec (YAML) of the cluster under test; without test paths, "
             "runs the packaged acceptance suite against it")
    group.addoption(
        "--cluster-reports", metavar="DIR", default="reports",
        help="where to write report.html, junit.xml, results.jsonl and the raw probe "
             "results (default: reports; an empty value writes none)")


#: Options that show something instead of running the contract: they write no evidence.
NO_RUN_OPTIONS = ("collectonly", "showfixtures", "show_fixtures_per_test", "markers",
                  "setupplan", "setuponly", "help", "version")


def writes_evidence(config: pytest.Config) -> bool:
    """Whether this invocation runs checks (so may leave evidence) at all."""
    return not any(getattr(config.option, name, False) for name in NO_RUN_OPTIONS)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "clause(name): the contract clause a test checks, e.g. 'storage.write'; "
                   "tests of clauses absent from the spec are not collected")
    spec_path = config.getoption("cluster")
    if not spec_path:
        return
    try:
        spec = load_spec(spec_path)
    except SpecError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[SPEC_KEY] = spec
    workerinput: dict[str, Any] | None = getattr(config, "workerinput", None)
    if workerinput is not None:
        config.stash[CACHE_DIR_KEY] = Path(workerinput["cluster_cache_dir"])
    else:
        for warning in spec.warnings:
            config.issue_config_time_warning(SpecWarning(warning), stacklevel=2)
        reports = config.getoption("cluster_reports")
        run_dir = None
        if reports and writes_evidence(config):
            try:
                run_dir = create_run_dir(Path(reports), spec.cluster.name, time.time())
            except OSError as exc:
                raise pytest.UsageError(
                    f"--cluster-reports={reports}: cannot create this run's directory there: "
                    f"{exc.strerror or exc}") from None
            if not config.option.xmlpath:
                config.option.xmlpath = str(run_dir / "junit.xml")
            if not getattr(config.option, "htmlpath", None):
                config.option.htmlpath = str(run_dir / "report.html")
                config.option.self_contained_html = True
        cache_dir = (run_dir / "probes" if run_dir is not None
                     else Path(tempfile.mkdtemp(prefix="pytest-cluster-")))
        config.stash[CACHE_DIR_KEY] = cache_dir
        config.pluginmanager.register(ClusterSession(config, spec, run_dir,
                                                     writes_evidence(config)), SESSION_PLUGIN)
    if config.args_source is not pytest.Config.ArgsSource.ARGS:
        config.args = [str(acceptance_dir())]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    spec = metafunc.config.stash.get(SPEC_KEY, None)
    if spec is None:
        return
    if "node" in metafunc.fixturenames:
        metafunc.parametrize("node", spec.cluster.nodes, ids=list(spec.cluster.nodes),
                             indirect=True)
    if "filesystem" in metafunc.fixturenames:
        metafunc.parametrize("filesystem", spec.storage,
                             ids=[fs.path for fs in spec.storage], indirect=True)
    if spec.gpus is not None and "gpu" in metafunc.fixturenames:
        slots = range(spec.gpus.slots)
        metafunc.parametrize("gpu", slots, ids=[f"gpu{i}" for i in slots], indirect=True)
    if spec.gpus is not None and "dtype" in metafunc.fixturenames:
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


def clause_name(item: pytest.Item, spec: Spec) -> tuple[str, bool] | None:
    """The clause an item checks and whether the spec has it (None: no clause marker)."""
    marker = item.get_closest_marker("clause")
    if marker is None or not marker.args:
        return None
    name = str(marker.args[0])
    section, _, key = name.partition(".")
    callspec = getattr(item, "callspec", None)
    params = callspec.params if callspec is not None else {}
    if name == "host.software":
        return name, isinstance(params.get("software"), VersionClause)
    if name == "host.same_software":
        return name, spec.host.same_software and len(spec.cluster.nodes) > 1
    if section == "host":
        return name, spec.host_clause(key) is not None
    if section == "gpus":
        return _gpu_clause(name, key, spec, params)
    if section == "interconnect":
        return _interconnect_clause(name, key, spec)
    if section == "storage":
        fs = params.get("filesystem")
        if not spec.storage:
            return "storage", False  # the whole section is absent
        if not isinstance(fs, StorageSpec):
            return name, False
        if key == "shared":
            return f"storage[{fs.path}].shared", fs.shared
        return f"storage[{fs.path}].{key}", fs.clause(key) is not None
    return name, True


def _interconnect_clause(name: str, key: str, spec: Spec) -> tuple[str, bool]:
    ic = spec.interconnect
    if ic is None:
        return "interconnect", False  # the whole section is absent
    if key == "intra_node":
        return name, ic.ranks_per_node > 1
    if key == "inter_node":
        return name, bool(ic.node_counts)
    if key == "node_network":
        return name, ic.node_network and len(spec.cluster.nodes) > 1
    return name, True


def _gpu_clause(name: str, key: str, spec: Spec, params: dict[str, Any]) -> tuple[str, bool]:
    gpus = spec.gpus
    if gpus is None:
        return "gpus", False  # the whole section is absent
    if key == "matmul":
        dtype = params.get("dtype")
        if not isinstance(dtype, str):  # no dtype in contract: parametrized with NOTSET
            return "gpus.matmul", False
        return f"gpus.matmul.{dtype}", any(d == dtype for d, _ in gpus.matmul)
    if key == "uniform":
        return name, True
    if key == "model":
        return name, gpus.model is not None
    if key == "same_driver":
        return name, len(spec.cluster.nodes) > 1
    if key == "nvlink":
        return name, gpus.nvlink is not None or gpus.nvlink_count is not None
    return name, gpus.item(key) is not None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Leave out the checks of clauses the contract does not have, and remember every
    contract case left (before -k, -m or --lf choose among them)."""
    spec = config.stash.get(SPEC_KEY, None)
    if spec is None:
        return
    keep, drop, absent = [], [], []
    suite = acceptance_dir()
    for item in items:
        found = clause_name(item, spec)
        if found is not None and not found[1]:
            drop.append(item)
            single = (found[0] == "host.same_software" and spec.host.same_software) or (
                found[0] == "gpus.same_driver" and spec.gpus is not None)
            absent.append(f"{found[0]} (needs 2+ nodes)" if single else found[0])
            continue
        keep.append(item)
        if found is not None:
            item.stash[CASE_KEY] = contract_case(item, found[0], suite)
    ic = spec.interconnect
    if ic is not None:
        absent.extend(f"interconnect.node_counts {n} (the cluster has "
                      f"{len(spec.cluster.nodes)} nodes)" for n in ic.node_counts_dropped)
    config.stash[PLANNED_KEY] = Plan(
        tuple(item.stash[CASE_KEY] for item in keep if CASE_KEY in item.stash),
        not_in_contract=tuple(sorted(set(absent))))
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def contract_case(item: pytest.Item, clause: str, suite: Path) -> Case:
    """The case an item checks, with an id that is the same whatever the working
    directory: 'acceptance/test_gpus.py::test_ecc_uncorrected[node01-gpu0]'."""
    case_id = item.nodeid
    with contextlib.suppress(ValueError):
        inner = item.nodeid.split("::", 1)[1]
        case_id = f"acceptance/{item.path.relative_to(suite).as_posix()}::{inner}"
    callspec = getattr(item, "callspec", None)
    params = callspec.params if callspec is not None else {}
    software = params.get("software")
    if isinstance(software, VersionClause):
        clause = software.key
    elif isinstance(params.get("package"), str):
        clause = f"{clause}.{params['package']}"
    node = params.get("node")
    return Case(case_id, clause, node if isinstance(node, str) else None)


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
        Plan(planned.cases, selected, planned.not_in_contract).write(
            config.stash[CACHE_DIR_KEY])


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[
        None, pytest.TestReport, pytest.TestReport]:
    """Every contract case's report says which case it is (pytest-xdist carries it)."""
    report = yield
    case = item.stash.get(CASE_KEY, None)
    if case is not None:
        report.pytest_cluster_case = case.to_json()  # type: ignore[attr-defined]
    return report



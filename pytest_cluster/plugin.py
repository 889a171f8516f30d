"""pytest plumbing: options, spec validation at configure time, collection, reports.

With `--cluster=SPEC` and no test paths on the command line, pytest collects the
packaged contract suite (pytest_cluster.acceptance); with paths, it runs those (your own
tests may use our fixtures). Nothing is written by pytest-xdist workers.
"""

from __future__ import annotations

import html
import importlib.util
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from _pytest import junitxml  # xml_key: the one way to add <testsuite> properties

from pytest_cluster.errors import SpecError
from pytest_cluster.plots import interconnect_charts
from pytest_cluster.report import (
    SIMULATED_BANNER,
    ResultsWriter,
    is_simulated,
    report_record,
    summary_html,
    tally,
)
from pytest_cluster.spec import Spec, StorageSpec, VersionClause, load_spec
from pytest_cluster.state import CACHE_DIR_KEY, SPEC_KEY
from pytest_cluster.units import format_number, size_id

pytest_plugins = ["pytest_cluster.fixtures"]

NOT_IN_CONTRACT_KEY = pytest.StashKey[list[str]]()
SESSION_PLUGIN = "pytest-cluster-session"


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
    config.stash[NOT_IN_CONTRACT_KEY] = []
    workerinput: dict[str, Any] | None = getattr(config, "workerinput", None)
    if workerinput is not None:
        config.stash[CACHE_DIR_KEY] = Path(workerinput["cluster_cache_dir"])
    else:
        reports = config.getoption("cluster_reports")
        reports_dir = Path(reports) if reports else None
        if reports_dir is not None:
            if not config.option.xmlpath:
                config.option.xmlpath = str(reports_dir / "junit.xml")
            if not getattr(config.option, "htmlpath", None):
                config.option.htmlpath = str(reports_dir / "report.html")
                config.option.self_contained_html = True
            cache_dir = reports_dir / "probes"
            shutil.rmtree(cache_dir, ignore_errors=True)
        else:
            cache_dir = Path(tempfile.mkdtemp(prefix="pytest-cluster-"))
        config.stash[CACHE_DIR_KEY] = cache_dir
        config.pluginmanager.register(ClusterSession(config, spec, reports_dir), SESSION_PLUGIN)
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
        if dtype is None:
            return name, False
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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    spec = config.stash.get(SPEC_KEY, None)
    if spec is None:
        return
    keep, drop, absent = [], [], config.stash[NOT_IN_CONTRACT_KEY]
    for item in items:
        found = clause_name(item, spec)
        if found is not None and not found[1]:
            drop.append(item)
            single = (found[0] == "host.same_software" and spec.host.same_software) or (
                found[0] == "gpus.same_driver" and spec.gpus is not None)
            absent.append(f"{found[0]} (needs 2+ nodes)" if single else found[0])
        else:
            keep.append(item)
    ic = spec.interconnect
    if ic is not None:
        absent.extend(f"interconnect.node_counts {n} (the cluster has "
                      f"{len(spec.cluster.nodes)} nodes)" for n in ic.node_counts_dropped)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


class ClusterSession:
    """Controller-only: results.jsonl, the HTML contract summary, the terminal summary."""

    def __init__(self, config: pytest.Config, spec: Spec, reports_dir: Path | None) -> None:
        self.config = config
        self.spec = spec
        self.reports_dir = reports_dir
        self.records: list[dict[str, Any]] = []
        self.writer = ResultsWriter(reports_dir / "results.jsonl", spec) if reports_dir else None

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        xml = self.config.stash.get(junitxml.xml_key, None)
        if xml is not None:
            xml.add_global_property("cluster", self.spec.cluster.name)
            xml.add_global_property("spec_sha256", self.spec.sha256)
            xml.add_global_property("simulated", str(is_simulated(self.spec)).lower())

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput["cluster_cache_dir"] = str(self.config.stash[CACHE_DIR_KEY])

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "call" or (report.when == "setup" and not report.passed):
            record = report_record(report)
            if record is None:
                return
            self.records.append(record)
            if self.writer is not None:
                self.writer.write(record)

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_summary(self, prefix: list[str], summary: list[str],
                                    postfix: list[str]) -> None:
        absent = self.not_in_contract()
        prefix.append(summary_html(self.spec, tally(self.records), absent))
        prefix.append(interconnect_charts(self.records))

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_report_title(self, report: Any) -> None:
        sim = " (SIMULATED)" if is_simulated(self.spec) else ""
        report.title = f"pytest-cluster: {self.spec.cluster.name}{sim}"

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_table_header(self, cells: list[str]) -> None:
        cells.insert(2, "<th>Measured</th>")
        cells.insert(3, "<th>Required</th>")

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_table_row(self, report: pytest.TestReport, cells: list[str]) -> None:
        props = dict(getattr(report, "user_properties", ()))
        measured = props.get("measured", props.get("error_kind", ""))
        if isinstance(measured, float):
            measured = format_number(measured)
        unit = props.get("unit", "")
        sim = ' <span class="simulated">SIMULATED</span>' if props.get("simulated") else ""
        cells.insert(2, f"<td>{html.escape(f'{measured} {unit}'.strip())}{sim}</td>")
        cells.insert(3, f"<td>{html.escape(str(props.get('requirement', '')))}</td>")

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        absent = sorted(set(self.not_in_contract()))
        write = terminalreporter.write_line
        terminalreporter.section("pytest-cluster")
        if is_simulated(self.spec):
            write(SIMULATED_BANNER, yellow=True, bold=True)
        write(f"cluster {self.spec.cluster.name}: {len(self.spec.cluster.nodes)} node(s), "
              f"{len(self.records)} contract check(s), "
              f"{sum(r['outcome'] != 'passed' for r in self.records)} failed")
        if absent:
            write(f"not in contract, not tested: {', '.join(absent)}")
        if self.reports_dir is not None:
            paths = [self.config.option.htmlpath, self.config.option.xmlpath,
                     str(self.reports_dir / "results.jsonl")]
            write("evidence: " + ", ".join(p for p in paths if p))
            write(f"raw probe results: {self.config.stash[CACHE_DIR_KEY]}")

    def not_in_contract(self) -> list[str]:
        absent: list[str] = self.config.stash.get(NOT_IN_CONTRACT_KEY, [])
        return absent

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self.writer is not None:
            self.writer.close()
        if self.reports_dir is None:
            shutil.rmtree(config.stash[CACHE_DIR_KEY], ignore_errors=True)

"""pytest hooks of configure time: the options, the spec validated from --cluster, this
run's directory for its evidence, and the controller's session (session.py).

With `--cluster=SPEC` and no test paths on the command line, pytest collects the
packaged contract suite (pytest_cluster.acceptance); with paths, it runs those (your own
tests may use our fixtures).
"""

from __future__ import annotations

import math
import os
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pytest_cluster import hookspecs, internals
from pytest_cluster.contract import Spec, extensions, guarded, load_spec, narrow
from pytest_cluster.contract.declaration import ACCEPTANCE, SANITY, STRESS
from pytest_cluster.errors import LaunchError, SpecError, UnitError, head
from pytest_cluster.evidence.baseline import golden_file
from pytest_cluster.evidence.record import sealing
from pytest_cluster.evidence.record.rundir import create_run_dir
from pytest_cluster.launchers import launcher_class
from pytest_cluster.run import baseline_option, disabling, lifecycle, validity
from pytest_cluster.run.after_checks import AfterChecks
from pytest_cluster.run.html_hooks import HTML_PLUGIN, HtmlHooks
from pytest_cluster.run.memory import MEMORY_PLUGIN, CaseMemory
from pytest_cluster.run.metrics_sink import (
    METRICS_PLUGIN,
    MetricsSink,
    metrics_path,
    run_level,
)
from pytest_cluster.run.output_paths import check_reports
from pytest_cluster.run.session import SESSION_PLUGIN, ClusterSession
from pytest_cluster.run.stash import CACHE_DIR_KEY, SPEC_KEY, VALID_FOR_KEY, WORKERS_CUT_KEY
from pytest_cluster.run.suite import acceptance_dir
from pytest_cluster.run.workers import cut_note, fit_workers, usable_cpus
from pytest_cluster.soak import driver as soak_driver
from pytest_cluster.soak import rounds as soak
from pytest_cluster.units import parse_duration

if TYPE_CHECKING:
    from pytest_cluster.contract.model import SpecNote
    from pytest_cluster.evidence.bundle.keys import Signer

class SpecWarning(UserWarning):
    """A spec value that is valid but probably not what was meant (e.g. GB/s for Gb/s)."""


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    """pytest-cluster's own hooks (hookspecs.py), for sinks of its evidence."""
    pluginmanager.add_hookspecs(hookspecs)


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
    group.addoption(
        "--cluster-baseline", metavar="DIR", default=None,
        help="compare this run with an earlier run's evidence directory (one that passes "
             "pytest-cluster verify): the same nodes and hardware, and no figure worse "
             "than there by more than the spec's baseline.tolerance (default 5%%)")
    group.addoption(
        "--cluster-baseline-key", metavar="PUBKEY", default=None,
        help="the baseline must be signed by this public key (PEM or OpenSSH), as "
             "`pytest-cluster verify --key` checks it")
    group.addoption(
        "--cluster-baseline-accept", metavar="SERIALS", action="append", default=None,
        help="SERIAL[,SERIAL...] or @FILE (one a line, # comments; repeatable): replaced "
             "parts (an RMA) accepted against the baseline: a GPU, disk, NIC or HCA whose "
             "serial (MAC, GUID) is now one of these (the new part's; OLD=NEW: only in "
             "place of OLD) is said, not failed, by baseline.hardware; its figures are "
             "still compared")
    group.addoption(
        "--cluster-soak", metavar="DURATION", default=None,
        help="soak: repeat the selected checks in rounds until DURATION (e.g. 48h) is up "
             "(no round starts after it; the first always runs, the last to its end); "
             "each round is a whole run with its own evidence, the soak's directory adds "
             "availability, the SLA credit, counters and steadiness over the rounds")
    group.addoption(
        "--cluster-soak-rounds", metavar="N", default=None,
        help="soak: at most N rounds (alone: exactly N rounds, however long they take)")
    group.addoption(
        "--cluster-soak-resume", metavar="DIR", default=None,
        help="go on with the stopped soak in DIR (same spec), numbering its rounds on; its "
             "earlier rounds count towards its time and availability")
    group.addoption(
        "--cluster-soak-round", metavar="N", default=None, type=int,
        help="(set by a soak for each of its rounds: this run is round N, written to "
             "--cluster-reports/round-NNNN)")
    group.addoption(
        "--cluster-metrics", metavar="FILE", default=None,
        help="also write the run in Prometheus' text format to FILE (atomically, for "
             "node_exporter's textfile collector): each node's verdict, each check's "
             "measured value and margin in base units, the run's status; a soak rewrites "
             "it after every round with availability and the credit so far")
    group.addoption(
        "--cluster-node", metavar="NODE", action="append", default=None,
        help="check only this node (repeatable; a hostlist like gpu-[001-004]; `.`: this "
             "host, run by the local launcher, as in a SLURM prolog, where it is the "
             "default): collection, probes and the verdict cover those nodes alone, and "
             "the clauses across nodes are listed as not checked")
    group.addoption(
        "--cluster-extension-limit", metavar="SECONDS", default=None,
        help="how long an installed extension's module may take to load before it is "
             f"left out (default {extensions.LOAD_LIMIT_S:g}; a loop at import is stopped "
             "there)")
    validity.add_options(group)
    sealing.add_options(group)


def chosen_spec(config: pytest.Config, spec: Spec) -> Spec:
    """The spec of this run's nodes: all of them, or those --cluster-node names (this host
    alone in a SLURM prolog or epilog); a name not in cluster.nodes is a usage error."""
    values = config.getoption("cluster_node") or []
    if not values and narrow.in_slurm_script(os.environ):
        values = [narrow.THIS_HOST]
    if not values:
        try:
            narrow.run_size(spec.cluster.nodes)
        except ValueError as exc:
            raise pytest.UsageError(f"{spec.file}: cluster.nodes: {exc}") from None
        return spec
    try:
        nodes, here = narrow.chosen(values, spec.cluster.nodes, os.environ)
        narrow.run_size(nodes)
    except ValueError as exc:
        raise pytest.UsageError(f"--cluster-node: {exc}") from None
    return narrow.narrow(spec, nodes, here=here)


def soak_options(config: pytest.Config) -> tuple[float | None, int | None] | None:
    """(duration in seconds, most rounds) of a soak this invocation drives, None when it
    drives none; a usage error when they are wrong. The soak's process runs no checks
    itself (its rounds do): it takes no pytest-xdist workers."""
    number = config.getoption("cluster_soak_round")
    if number is not None and not 1 <= number <= soak.MAX_ROUNDS:
        raise pytest.UsageError(f"--cluster-soak-round={head(str(number))}: expected a round "
                                f"number from 1 to {soak.MAX_ROUNDS:,} (a soak sets it for "
                                "each of its rounds)")
    raw = config.getoption("cluster_soak")
    rounds = config.getoption("cluster_soak_rounds")
    resume = config.getoption("cluster_soak_resume")
    if raw is None and rounds is None and resume is None:
        return None
    if config.getoption("cluster_soak_round"):
        raise pytest.UsageError("--cluster-soak-round is set by a soak for its rounds; "
                                "it cannot start a soak itself")
    if resume is not None and not resume.strip():
        raise pytest.UsageError("--cluster-soak-resume=: expected the directory of a "
                                "stopped soak, got an empty value")
    try:
        duration = parse_duration(raw) if raw is not None else None
    except UnitError as exc:
        raise pytest.UsageError(f"--cluster-soak={raw[:40]}: {exc}") from None
    try:
        most = soak.parse_rounds(rounds) if rounds is not None else None
    except soak.SoakError as exc:
        raise pytest.UsageError(f"--cluster-soak-rounds={rounds[:40]}: {exc}") from None
    if not config.getoption("cluster_reports"):
        raise pytest.UsageError("a soak writes its rounds' evidence: it needs "
                                "--cluster-reports=DIR (not empty)")
    if not writes_evidence(config):
        return None
    option = config.option
    option.dist, option.tx, option.numprocesses = "no", [], None
    return duration, most


def evidence_dir(config: pytest.Config, spec: Spec, reports: Path,
                 soaking: tuple[float | None, int | None] | None) -> Path:
    """This run's directory: a new one under `reports`; a soak's round's is
    reports/round-NNNN; a resumed soak's is the soak's own."""
    number = config.getoption("cluster_soak_round")
    if number:
        path = reports / soak.round_name(int(number))
        path.mkdir(parents=True)
        return path
    resume = config.getoption("cluster_soak_resume")
    if soaking is not None and resume:
        try:
            soak.resume_dir(Path(resume), spec.sha256)
        except soak.SoakError as exc:
            raise pytest.UsageError(f"--cluster-soak-resume={resume}: {exc}") from None
        return Path(resume)
    return create_run_dir(reports, spec.cluster.name, time.time())


#: The levels a contract case has (its clause's declaration says which), as -m selects.
LEVEL_MARKERS = {
    SANITY: "no load: counts, models, NVML health, versions, reachability (seconds; a "
            "SLURM prolog or pre-job gate): pytest --cluster=SPEC -m sanity",
    ACCEPTANCE: "the checks under load: benchmarks of GPUs, storage and interconnect; "
                "-m acceptance runs them and the sanity checks (the default run)",
    STRESS: "long sustained load; opt-in: collected only when -m names stress; -m stress "
            "runs the sanity, acceptance and stress checks (under `not`, a level is its "
            "own checks only)",
}


#: Options that show something instead of running the contract: they write no evidence.
NO_RUN_OPTIONS = ("collectonly", "showfixtures", "show_fixtures_per_test", "markers",
                  "setupplan", "setuponly", "help", "version")


def writes_evidence(config: pytest.Config) -> bool:
    """Whether this invocation runs checks (so may leave evidence) at all."""
    return not any(getattr(config.option, name, False) for name in NO_RUN_OPTIONS)


def fit_xdist_workers(config: pytest.Config) -> None:
    """Cut `-n N` to this machine's CPUs (see workers.py). Runs before pytest-xdist's own
    pytest_configure, which starts its distributed session from `dist` and `tx`; gateways
    given with --tx are left as they are."""
    option = config.option
    tx = getattr(option, "tx", None) or []
    if (not getattr(option, "numprocesses", None) or getattr(option, "dist", "no") == "no"
            or not tx or any(gateway != "popen" for gateway in tx)):
        return
    requested = len(tx)
    cpus = usable_cpus()
    workers = fit_workers(requested, cpus)
    if workers == requested:
        return
    option.numprocesses, option.tx = workers, ["popen"] * workers
    if workers == 0:
        option.dist = "no"
    config.stash[WORKERS_CUT_KEY] = cut_note(requested, workers, cpus)


def pytest_report_header(config: pytest.Config) -> str | None:
    return config.stash.get(WORKERS_CUT_KEY, None)


def _metrics_file(config: pytest.Config) -> Path | None:
    """--cluster-metrics' file, checked before anything is made: a bad one is a usage
    error, not a traceback after the run."""
    metrics = config.getoption("cluster_metrics")
    if metrics is None or not writes_evidence(config):
        return None
    try:
        return metrics_path(metrics)
    except ValueError as exc:
        raise pytest.UsageError(f"--cluster-metrics={metrics} {exc}") from None


def _output_files(config: pytest.Config) -> Path | None:
    """Every file the user named for the run to write (--cluster-metrics, --junitxml,
    --html), checked before the first check runs; --cluster-metrics' path."""
    check_reports(config)
    return _metrics_file(config)


def _metrics(config: pytest.Config, spec: Spec, run_dir: Path | None,
             path: Path | None) -> None:
    """--cluster-metrics: the sink that writes the run's metrics (run/metrics_sink.py)."""
    if path is not None:
        config.pluginmanager.register(MetricsSink(
            path, spec.cluster.name, run_dir.name if run_dir else "", run_level(config)),
            METRICS_PLUGIN)


class ExtensionWarning(UserWarning):
    """An installed extension was left out of the run, or printed while it was loaded."""


def _load_extensions(config: pytest.Config) -> None:
    """With --cluster (never without: a plain pytest run imports no extension), the
    installed extensions, loaded before the spec is read; what is wrong with them said once
    (on the controller, a warning each); the run goes on without what was left out."""
    raw = config.getoption("cluster_extension_limit")
    limit = extensions.LOAD_LIMIT_S
    if raw is not None:
        try:
            limit = float(raw)
        except ValueError:
            limit = math.nan
        if not 0 < limit <= 3600:
            raise pytest.UsageError(f"--cluster-extension-limit={head(str(raw), 40)}: "
                                    "expected seconds, more than 0 and at most 3600")
    session = config.pluginmanager.get_plugin("session")  # made before configure
    if isinstance(session, pytest.Session):  # a thread an extension left is not waited for
        guarded.ends_with(lambda: int(session.exitstatus))  # at exit: the run's status
    found = extensions.load(limit)
    if internals.worker_input(config) is not None:
        return
    for text in found:
        try:
            internals.warn_at(config, ExtensionWarning(f"pytest-cluster: {text}"),
                              f"<entry point group {extensions.GROUP}>", 0)
        except ExtensionWarning as exc:
            raise pytest.UsageError(f"{exc} (a warning, an error under this run's warning "
                                    "filters)") from None


def _read_spec(path: str) -> Spec:
    """The spec at `path`; a usage error for a bad spec, naming the installed extensions
    left out of the run (one may declare what the spec asks for), and for a launcher of an
    extension's that cannot be imported."""
    try:
        spec = load_spec(path)
    except SpecError as exc:
        left = extensions.left_out()
        named = "\n  ".join(left[:3]) + (f"\n  and {len(left) - 3} more" if len(left) > 3
                                          else "")
        raise pytest.UsageError(str(exc) + (
            "\n(an installed extension left out of this run may declare what the spec asks "
            f"for:\n  {named})" if left else "")) from None
    try:
        launcher_class(spec.cluster.launcher)
    except LaunchError as exc:
        raise pytest.UsageError(f"{spec.file}: cluster.launcher: {exc}") from None
    try:
        golden_file.check_spec(spec)  # a file the spec names, read before any test runs
    except SpecError as exc:
        raise pytest.UsageError(str(exc)) from None
    return spec


def _warn(config: pytest.Config, warning: SpecNote) -> None:
    """A spec warning, shown at its place in the spec (pytest's summary then quotes the
    spec's line, not ours); a usage error where the warning filters make warnings errors
    (-W error, filterwarnings = error)."""
    try:
        internals.warn_at(config, SpecWarning(warning.said), warning.file or "<spec>",
                          warning.line or 0)
    except SpecWarning:
        raise pytest.UsageError(f"{warning} (a spec warning, an error under this run's "
                                "warning filters)") from None


def _declare_markers(config: pytest.Config) -> None:
    """The `clause` marker and a marker per level (-m sanity), as `pytest --markers` lists."""
    config.addinivalue_line(
        "markers", "clause(name): the contract clause a test checks, e.g. 'storage.write'; "
                   "tests of clauses absent from the spec are not collected")
    for level, what in LEVEL_MARKERS.items():
        config.addinivalue_line("markers", f"{level}: {what}")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    _declare_markers(config)
    spec_path = config.getoption("cluster")
    if spec_path is None:
        return
    if not spec_path.strip():
        raise pytest.UsageError(
            "--cluster=: expected the path of a contract spec (YAML), got an empty value (an "
            "unset variable?); leave the option out to run without a cluster")
    _load_extensions(config)
    spec = chosen_spec(config, _read_spec(spec_path))
    config.stash[SPEC_KEY] = spec
    disabling.configure(config)  # the kill switch: a bad file stops the run here
    lifecycle.open_run(config, spec, bool(config.getoption("cluster_soak_round")))
    workerinput = internals.worker_input(config)
    if workerinput is not None:
        config.stash[CACHE_DIR_KEY] = Path(workerinput["cluster_cache_dir"])
    else:
        soaking = soak_options(config)
        config.stash[VALID_FOR_KEY] = validity.valid_for(config)
        fit_xdist_workers(config)
        for warning in spec.warnings:
            _warn(config, warning)
        reports = config.getoption("cluster_reports")
        metrics = _output_files(config)
        signers: tuple[Signer, ...] = ()
        run_dir = None
        accepted = None
        if reports and writes_evidence(config):
            signers = sealing.signers(config)  # before the run's directory is made
            accepted = baseline_option.load_baseline(config)
            try:
                run_dir = evidence_dir(config, spec, Path(reports), soaking)
            except OSError as exc:
                raise pytest.UsageError(
                    f"--cluster-reports={reports}: cannot create this run's directory there: "
                    f"{exc.strerror or exc}") from None
            if not config.option.xmlpath:
                config.option.xmlpath = str(run_dir / "junit.xml")
            if not getattr(config.option, "htmlpath", None):
                config.option.htmlpath = str(run_dir / "report.html")
                config.option.self_contained_html = True
        elif writes_evidence(config) and config.getoption("cluster_baseline") is not None:
            raise pytest.UsageError("--cluster-baseline needs this run's evidence to compare "
                                    "with it: --cluster-reports= is empty (expected a "
                                    "directory)")
        cache_dir = (run_dir / "probes" if run_dir is not None
                     else Path(tempfile.mkdtemp(prefix="pytest-cluster-")))
        config.stash[CACHE_DIR_KEY] = cache_dir
        controller = ClusterSession(config, spec, run_dir, cache_dir, AfterChecks(),
                                    writes_evidence(config), signers, accepted)
        config.pluginmanager.register(controller, SESSION_PLUGIN)
        _metrics(config, spec, run_dir, metrics)
        config.pluginmanager.register(HtmlHooks(controller), HTML_PLUGIN)
        config.pluginmanager.register(CaseMemory(config, controller.html_report),
                                      MEMORY_PLUGIN)
        if soaking is not None and run_dir is not None:
            soak_driver.start(config, spec, run_dir, soaking[0], soaking[1], controller)
        if config.getoption("cluster_soak_round"):
            controller.links_latest = False
    if config.args_source is not pytest.Config.ArgsSource.ARGS:
        config.args = [str(acceptance_dir())]

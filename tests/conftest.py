"""Shared helpers for the plugin's own tests."""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest

from tests import extra_clause
from tests.netns_cluster import NetnsCluster, Unavailable


def has_torch() -> bool:
    import importlib.util

    return importlib.util.find_spec("torch") is not None


PYTHON = sys.executable


def pytest_configure(config: pytest.Config) -> None:
    """With PYTEST_CLUSTER_TEST_EXTRA_CLAUSE=1, one more clause is installed through the
    extension point for the whole session (tests/extra_clause.py): its distribution on
    sys.path here and on the PYTHONPATH of every run the tests start (pytester's in this
    process and in subprocesses, the CLI's), and loaded here at once, as a run with
    --cluster loads it, so that what the registries hold does not depend on which test ran
    first. xdist's workers inherit the folder from the process that made it."""
    if not extra_clause.on():
        return
    given = os.environ.get(extra_clause.SITE)
    if given and Path(given).is_dir():
        site = Path(given)
    else:
        site = Path(tempfile.mkdtemp(prefix="pcx-extra-clause-"))
        extra_clause.install(site)
        config.add_cleanup(lambda: shutil.rmtree(site, ignore_errors=True))
        os.environ[extra_clause.SITE] = str(site)
        path = os.environ.get("PYTHONPATH")
        os.environ["PYTHONPATH"] = os.pathsep.join([str(site), *([path] if path else [])])
    if str(site) not in sys.path:
        sys.path.insert(0, str(site))
    from pytest_cluster.contract import extensions

    problems = extensions.load()
    assert not problems and extra_clause.EXTENSION.name in (
        e.name for e in extensions.extensions()), problems


def write_spec(directory: Path, text: str, name: str = "trial.yaml") -> Path:
    path = directory / name
    path.write_text(text, encoding="utf-8")
    return path


def pytest_report_header() -> list[str]:
    if not extra_clause.on():
        return []
    names = ", ".join(d.id for d in extra_clause.EXTENSION.clauses)
    return [f"{extra_clause.HEADER}: {names}"]


_PLANNED: dict[tuple[str, ...], tuple[str, ...]] = {}


def planned(pytester: pytest.Pytester, spec: str, *args: str) -> tuple[str, ...]:
    """The cases a run of `spec` (its text) with `args` would run, by name
    (`test_gpu_count[n1]`): what its `--collect-only -q` lists, the selection applied. A
    test derives the counts it asserts from these, never from a hand count of a spec's
    cases (a new clause changes them). Kept per spec and arguments for the session."""
    key = (spec, *args)
    if key not in _PLANNED:
        path = pytester.path / "planned.yaml"
        path.write_text(spec, encoding="utf-8")
        result = pytester.runpytest(f"--cluster={path}", "-p", "no:cacheprovider",
                                    "--collect-only", "-q", *args)
        path.unlink()
        cases = tuple(line.rpartition("::")[2] for line in result.stdout.lines if "::" in line)
        assert cases, result.stdout.str()[-3000:]
        _PLANNED[key] = cases
    return _PLANNED[key]


def on(cases: tuple[str, ...], where: str) -> tuple[str, ...]:
    """The cases about `where`: a node ('n1') or one of its GPUs ('n1-gpu0'), among their
    parameters (`test_gpu_memory[n1-gpu0]`, `test_gpu_matmul[n1-gpu0-bf16]`,
    `test_software_version[n1-kernel]`)."""
    pattern = re.compile(rf"[\[-]{re.escape(where)}[-\]]")
    return tuple(case for case in cases if pattern.search(case))


def on_no_node(cases: tuple[str, ...], nodes: tuple[str, ...]) -> tuple[str, ...]:
    """The cases about no one of `nodes`: the cluster's checks ("the same on every node",
    collectives across nodes)."""
    about_one = {case for node in nodes for case in on(cases, node)}
    return tuple(case for case in cases if case not in about_one)


def on_nodes(cases: tuple[str, ...], nodes: tuple[str, ...]) -> tuple[str, ...]:
    """The cases about any one of `nodes` (see `on`), in the order they run."""
    about = {case for node in nodes for case in on(cases, node)}
    return tuple(case for case in cases if case in about)


def faulted(spec: str, fault: str | None = None) -> tuple[str, ...]:
    """The nodes the sim faults of `spec` (its text) name, those whose field `fault`
    (`latency_factor`, `nic_down`, ...) differs from its default when given, in the order
    named: the nodes a scenario breaks, read from the spec a test wrote, never listed by
    hand beside it."""
    from dataclasses import MISSING, fields

    from pytest_cluster.contract import parse_spec
    from pytest_cluster.contract.sections.sim_records import SimFault

    sim = parse_spec(spec, "faulted.yaml").sim
    assert sim is not None, "the spec has no sim section"
    default = {f.name: f.default for f in fields(SimFault) if f.default is not MISSING}
    assert fault is None or fault in default, f"no sim fault {fault!r}"
    return tuple(dict.fromkeys(
        f.node for f in sim.faults
        if fault is None or getattr(f, fault) != default[fault]))


def added_promised(spec: str, level: str | None = None) -> set[str]:
    """The clauses that installed extensions declared and `spec` (its text) promises (at
    `level`): what a test that names the clauses of a spec by hand adds to its set, so
    that it holds with an extension installed (PYTEST_CLUSTER_TEST_EXTRA_CLAUSE=1) too."""
    from pytest_cluster.contract import parse_spec
    from pytest_cluster.contract.extensions import added_clauses
    from pytest_cluster.contract.model import Promises

    parsed = parse_spec(spec, "added.yaml")
    found = set()
    for declaration in added_clauses():
        record = parsed.section(declaration.section)
        if (isinstance(record, Promises) and declaration.is_clause
                and record.item(declaration.key) is not None
                and level in (None, declaration.level)):
            found.add(declaration.id)
    return found


@pytest.fixture
def scratch(tmp_path: Path) -> Generator[Path, None, None]:
    """A directory for storage probes, removed afterwards."""
    target = tmp_path / "fs"
    target.mkdir()
    yield target
    shutil.rmtree(target, ignore_errors=True)


@pytest.fixture(scope="module")
def netns() -> Iterator[NetnsCluster]:
    """A real 4-node cluster of network namespaces with an sshd each (see netns_cluster)."""
    try:
        cluster = NetnsCluster(4)
    except Unavailable as exc:
        pytest.skip(f"no namespace cluster on this machine: {exc}")
    with cluster:
        yield cluster


@pytest.fixture(scope="module")
def slurm(netns: NetnsCluster) -> Iterator[NetnsCluster]:
    """The same cluster with SLURM (slurmctld here, a slurmd per node); SLURM_CONF set."""
    try:
        env = netns.start_slurm()
    except Unavailable as exc:
        pytest.skip(f"no SLURM on this machine: {exc}")
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield netns
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value

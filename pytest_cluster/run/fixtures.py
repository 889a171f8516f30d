"""Fixtures for contract tests: `cluster`, `node`, `filesystem` and probe results."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_cluster.evidence.record.check import Evidence
from pytest_cluster.evidence.record.plan import Plan
from pytest_cluster.measure import gpus, storage
from pytest_cluster.measure.cluster import Cluster
from pytest_cluster.measure.network.fabric import NIC_START
from pytest_cluster.run.lifecycle import run_launcher
from pytest_cluster.run.stash import CACHE_DIR_KEY, SPEC_KEY

if TYPE_CHECKING:
    from pytest_cluster.contract.model import Spec, StorageSpec
    from pytest_cluster.launchers.result import ProbeResult

NEEDS_SPEC = "this test needs a contract spec: run pytest --cluster=trial.yaml"


@pytest.fixture(scope="session")
def cluster_spec(pytestconfig: pytest.Config) -> Spec:
    """The validated contract spec given with --cluster (frozen records)."""
    spec = pytestconfig.stash.get(SPEC_KEY, None)
    if spec is None:
        pytest.fail(NEEDS_SPEC, pytrace=False)
    return spec


@pytest.fixture(scope="session")
def cluster(pytestconfig: pytest.Config, cluster_spec: Spec) -> Cluster:
    """The cluster under test: spec, nodes, launcher; probes run once per node per run.
    The launcher is the run's (lifecycle.py): closed when the run ends, not here."""
    cache_dir = pytestconfig.stash[CACHE_DIR_KEY]
    return Cluster(cluster_spec, cache_dir, run_launcher(pytestconfig),
                   selected_clauses(cache_dir))


def selected_clauses(cache_dir: Path) -> frozenset[str] | None:
    """The clauses this run's selection checks, from the plan the collecting process
    wrote; None when no plan is known (every clause)."""
    plan = Plan.read(cache_dir)
    if not plan.known:
        return None
    return frozenset(case.clause for case in plan.cases if case.case_id in plan.selected)


def _param(request: pytest.FixtureRequest) -> Any:
    """The value the plugin parametrized this fixture with; without a spec there is none."""
    if not hasattr(request, "param"):
        pytest.fail(NEEDS_SPEC, pytrace=False)
    return request.param


@pytest.fixture
def node(request: pytest.FixtureRequest) -> str:
    """The name of the node under test; tests using it run once per node of the spec."""
    name: str = _param(request)
    return name


@pytest.fixture
def filesystem(request: pytest.FixtureRequest) -> StorageSpec:
    """The filesystem under test (a `storage:` entry); tests run once per filesystem."""
    fs: StorageSpec = _param(request)
    return fs


@pytest.fixture
def gpu(request: pytest.FixtureRequest) -> int:
    """The index of the GPU under test (NVML order); tests run for each promised GPU."""
    index: int = _param(request)
    return index


@pytest.fixture
def dtype(request: pytest.FixtureRequest) -> str:
    """A matmul dtype of the contract (bf16, fp16, tf32, fp32, fp8)."""
    name: str = _param(request)
    return name


@pytest.fixture
def collective(request: pytest.FixtureRequest) -> str:
    """A collective of the contract (all_reduce, all_gather, reduce_scatter, alltoall)."""
    name: str = _param(request)
    return name


@pytest.fixture
def payload(request: pytest.FixtureRequest) -> int:
    """A payload size of the contract, in bytes."""
    size: int = _param(request)
    return size


@pytest.fixture
def node_count(request: pytest.FixtureRequest) -> int:
    """How many nodes (the first ones of the spec) a multi-node collective spans."""
    count: int = _param(request)
    return count


@pytest.fixture
def evidence(request: pytest.FixtureRequest) -> Evidence:
    """Records measured vs required into JUnit properties and results.jsonl, then asserts."""
    return Evidence(request.node)


@pytest.fixture(scope="session", autouse=True)
def fabric_at_start(request: pytest.FixtureRequest) -> None:
    """The NIC reading a run's fabric checks read and its error counters are compared
    with, taken before its first case (in each process; once per run, shared)."""
    spec = request.config.stash.get(SPEC_KEY, None)
    if spec is not None and spec.fabric is not None:
        cluster: Cluster = request.getfixturevalue("cluster")
        cluster.probe_all(NIC_START)


def _cluster(request: pytest.FixtureRequest) -> Cluster:
    """The session's `cluster`, for a per-case fixture. Asked for inside the fixture, not
    named as its argument: pytest adds a finalizer to a session fixture for each run of a
    per-case fixture that names it, and keeps it (with the case's request and item) until
    the session ends - 3 per case, over 100 MB at 1,024 nodes x 8 GPUs."""
    cluster: Cluster = request.getfixturevalue("cluster")
    return cluster


@pytest.fixture
def host_result(request: pytest.FixtureRequest, node: str) -> ProbeResult:
    """The host probe's result on `node` (CPU, memory, versions), or its error."""
    return _cluster(request).host(node)


@pytest.fixture
def storage_result(request: pytest.FixtureRequest, node: str,
                   filesystem: StorageSpec) -> ProbeResult:
    """The storage probe's result for `filesystem` on `node`, or its error."""
    return storage.storage(_cluster(request), node, filesystem)


@pytest.fixture
def import_result(request: pytest.FixtureRequest, node: str,
                  filesystem: StorageSpec) -> ProbeResult:
    """The import-latency probe's result for `filesystem`'s interpreter on `node`."""
    return storage.import_latency(_cluster(request), node, filesystem)


@pytest.fixture
def gpu_result(request: pytest.FixtureRequest, node: str) -> ProbeResult:
    """The NVML GPU probe's result on `node` (inventory and health), or its error."""
    return gpus.gpu(_cluster(request), node)


@pytest.fixture
def gpu_perf_result(request: pytest.FixtureRequest, node: str) -> ProbeResult | None:
    """The torch GPU probe's result on `node` (all GPUs at once), None if not needed."""
    return gpus.gpu_perf(_cluster(request), node)

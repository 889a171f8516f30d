"""Host clauses, per node: CPU cores and threads, memory. Each is a field of the host
probe's payload compared with the clause, as its declaration (spec/clauses.py) reads it:
a test per declared clause, `test_cpu_cores[node01]`."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from pytest_cluster.run.contract_tests import check_reading, table_tests

if TYPE_CHECKING:
    from pytest_cluster.evidence.check import Evidence
    from pytest_cluster.launchers.result import ProbeResult
    from pytest_cluster.spec.clauses import Declaration
    from pytest_cluster.spec.model import Spec


def _test(declaration: Declaration) -> Callable[..., None]:
    def test(cluster_spec: Spec, host_result: ProbeResult, evidence: Evidence) -> None:
        clause = cluster_spec.host.clause(declaration.key)
        assert clause is not None, f"{declaration.id} is not in the contract"
        check_reading(evidence, declaration, clause, host_result,
                      evidence.require(host_result, clause))
    return test


globals().update(table_tests("host", _test))

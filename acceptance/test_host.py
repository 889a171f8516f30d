"""Host clauses, per node: CPU cores and threads, memory. Each is a field of the host
probe's payload compared with the clause, as its declaration (contract/clauses.py) reads it:
a test per declared clause, `test_cpu_cores[node01]`."""

from __future__ import annotations

from pytest_cluster.run.contract_tests import node_reading, table_tests

globals().update(table_tests("host", node_reading))

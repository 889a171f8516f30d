"""The clauses of the sections installed extensions add (contract/extensions.py), per node:
each a field of its probe's payload compared with the clause, as its declaration reads it
(`test_<section>_<key>[node01]`). Nothing here names an extension: the tests follow from
what is installed."""

from __future__ import annotations

from pytest_cluster.contract.extensions import added_sections
from pytest_cluster.run.contract_tests import node_reading, table_tests

for _section in added_sections():
    globals().update(table_tests(_section.name, node_reading))

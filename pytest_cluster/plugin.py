"""The pytest plugin (entry point `cluster`): its hooks live in a module each, in run/.

- configure.py: the options, the spec validated at configure time, the run's directory;
- collection.py: the contract's parameters, clauses not in the spec left out, the plan;
- disabling.py: the kill switch (--cluster-disable): its clauses' cases skipped, said;
- fixtures.py: `cluster`, `node`, `filesystem`, `gpu`, probe results, `evidence`;
- session.py (registered by configure, on the controller only): the evidence of a run;
- collector_gc.py: the garbage collector tuned while the collected cases run;
- memory.py: each case's items and reports let go of once read (the plugin beside the
  session is registered by configure, on the controller only).

Without `--cluster` the plugin does nothing: other test suites run as before.
"""

from __future__ import annotations

# memory and disabling first: configure imports them (a plugin module is rewritten only
# if not yet imported)
pytest_plugins = ["pytest_cluster.run.memory", "pytest_cluster.run.disabling",
                  "pytest_cluster.run.configure",
                  "pytest_cluster.run.collection", "pytest_cluster.run.level_select",
                  "pytest_cluster.run.fixtures",
                  "pytest_cluster.run.collector_gc"]

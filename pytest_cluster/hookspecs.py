"""pytest-cluster's own hooks, for plugins that take its evidence somewhere else (a metrics
exporter, a database, a chat channel) without touching our code.

Registered with pluggy by `pytest_addhooks` (run/configure.py), as pytest-xdist's
`xdist/newhooks.py` and pytest-html's `pytest_html/hooks.py` are. Implement them in a
conftest.py or in a plugin of your own (`-p mysink`, or an entry point in group
`pytest11`); every argument is keyword-only, and an implementation may take only the ones
it needs. They are called on the controller only (never on a pytest-xdist worker), in
this order in a run:

1. `pytest_cluster_result_line` for every line of results.jsonl as it is written (the run
   line, each case's result, a soak's round lines, the end record), also when
   `--cluster-reports=` is empty and no file is written;
2. `pytest_cluster_soak_round` after each round of a soak (`--cluster-soak`);
3. `pytest_cluster_node_verdict` once per node of the spec, once every check has ended;
4. `pytest_cluster_run_ended` with the end record;
5. `pytest_cluster_evidence_sealed` once the run's manifest is written (only where the run
   wrote evidence).

The records are the JSON objects written to the evidence (plain dicts, lists, strings,
numbers), typed as pytest_cluster/evidence/record/lines.py declares them (a node's verdict:
`pytest_cluster.evidence.verdict.nodes.NodeEntry`): a sink must not change them.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    import pytest

    from pytest_cluster.evidence.record.lines import EndLine, Line, RoundLine
    from pytest_cluster.evidence.verdict.nodes import NodeEntry

hookspec = pluggy.HookspecMarker("pytest")


@hookspec
def pytest_cluster_result_line(config: pytest.Config, record: Line) -> None:
    """A line of results.jsonl, as it is written (`record["type"]` says which: run,
    result, round_result, round, derived cases' results, end); a result line's keys are
    `pytest_cluster.evidence.record.lines.ResultLine`'s (`records.is_result` tells one)."""


@hookspec
def pytest_cluster_soak_round(config: pytest.Config, record: RoundLine) -> None:
    """A soak's round has ended: its `round` line (number, status, UTC start and end,
    counts, the nodes by state, and its run directory relative to the soak's)."""


@hookspec
def pytest_cluster_soak_progress(config: pytest.Config, rounds: int,
                                 availability: dict[str, float], credit: str,
                                 currency: str) -> None:
    """A soak after each round: the rounds finished, each node's availability so far (a
    share, as the soak's availability cases count it) and the SLA credit owed so far (a
    decimal text in `currency`; "0" without an sla: section; "" while no round has
    judged a node: nothing observed, nothing settled)."""


@hookspec
def pytest_cluster_node_verdict(config: pytest.Config, verdict: NodeEntry) -> None:
    """A node's verdict, as verdict.json lists it (node, verdict, reasons, ...)."""


@hookspec
def pytest_cluster_run_ended(config: pytest.Config, end: EndLine) -> None:
    """The run's end record (status, counts, coverage, verdict counts), the last line of
    results.jsonl."""


@hookspec
def pytest_cluster_evidence_sealed(config: pytest.Config, run_dir: Path,
                                   manifest: Path) -> None:
    """The run's evidence is complete and sealed: `manifest` (absolute) covers every file
    of `run_dir` (absolute); `pytest-cluster verify run_dir` checks it."""

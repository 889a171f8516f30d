"""The run's directory sealed, last: the manifest over every file of the run (reports
written, JUnit's testcases put back), signed by the keys given, with what failed late;
then the run's closing line and the manifest's said on the terminal (stderr without one),
and the sinks told (pytest_cluster_evidence_sealed). A manifest that cannot be written is
said on stderr: nothing is left to record it in."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from pytest_cluster.evidence.sealing import predicate, seal_run, sealed_line
from pytest_cluster.report.terminal import closing_line

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    import pytest

    from pytest_cluster.contract import Spec
    from pytest_cluster.evidence.bundle.keys import Signer
    from pytest_cluster.evidence.sinks.results import EndLine
    from pytest_cluster.evidence.verdict import NodeVerdict


def seal_and_say(config: pytest.Config, spec: Spec, run_dir: Path, times: tuple[float, float],
                 end: EndLine | None, verdicts: Sequence[NodeVerdict], outside: list[str],
                 failures: list[str], signers: tuple[Signer, ...]) -> None:
    """`run_dir` sealed: `times`, when the run started and ended (the end record's where
    there is one: its times as every other view says them); `outside`, the reports put
    outside it (--junitxml, --html: not in its manifest); `failures`, what failed late."""
    facts = predicate(config, spec, times[0], times[1], outside, failures)
    try:
        sealed = seal_run(run_dir, facts, signers)
    except OSError as exc:
        sys.stderr.write(f"pytest-cluster: NOT SEALED: the manifest of {run_dir} cannot "
                         f"be written: {exc.strerror or exc}\n")
        return
    text = sealed_line(sealed, tuple(failures))
    if end is not None:
        text = f"{closing_line(end, verdicts)}\n{text}"
    config.hook.pytest_cluster_evidence_sealed(
        config=config, run_dir=run_dir.resolve(), manifest=sealed.path.resolve())
    terminal = config.pluginmanager.get_plugin("terminalreporter")
    if terminal is not None:
        terminal.write_line(text)
    else:
        print(text, file=sys.stderr)

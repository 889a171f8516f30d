"""A run directory for the bundle's tests to seal."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    run = tmp_path / "20261123T100000Z-c1"
    (run / "probes").mkdir(parents=True)
    (run / "junit.xml").write_text("<testsuites><testsuite/></testsuites>\n")
    (run / "results.jsonl").write_text('{"type": "run"}\n{"type": "end"}\n')
    (run / "probes" / "gpu-1.json").write_text("{}\n")
    (run / "probes" / "gpu-1.lock").write_text("")
    return run

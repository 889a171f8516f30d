"""One more clause, added through the extension point as an installed package would add it:
`gpus.extra_copy`, a per-GPU comparison of a field the torch probe already measures, with a
default, so that every spec with a `gpus:` section promises it (a case for every GPU).

With PYTEST_CLUSTER_TEST_EXTRA_CLAUSE=1, tests/conftest.py installs this module as the
extension of a distribution on the path of every run of the session, in this process and
in the runs it starts (`install`), so that the suite proves what issue 49 asks: a new
clause breaks no test that is not about it (`make test-extra-clause`). Standard library and
pytest_cluster's public records only: the module is copied, as it is, beside the
distribution's metadata."""

from __future__ import annotations

import os
from pathlib import Path

from pytest_cluster import Actor, Declaration, Dim, Extension, Fault, Reads, Value

#: The switch: 1 runs the session with the extra clause installed
SWITCH = "PYTEST_CLUSTER_TEST_EXTRA_CLAUSE"
#: Where the process that installed it put the distribution (its children reuse it)
SITE = "PYTEST_CLUSTER_TEST_EXTRA_SITE"
#: The module's name in that folder, and the distribution's
MODULE = "pcx_extra_clause"
DIST = "pcx-extra-clause"
#: What the session's header says while it is installed
HEADER = f"installed through the extension point for this session ({SWITCH}=1)"

EXTENSION = Extension(
    name="extra_clause",
    clauses=(Declaration("gpus", "extra_copy", Value.QUANTITY, Dim.RATE, ">=",
                         default=">= 1 MB/s",
                         reads=Reads("gpu_perf", "copy", "bytes_per_s",
                                     method="the extra clause of the test extension"),
                         fault=Fault("PC-TEST-EXTRA-COPY", "nothing: a test's clause",
                                     Actor.TOOL)),),
)


def install(site: Path) -> None:
    """Write the distribution (its metadata, its entry point, this module) into `site`."""
    info = site / f"{DIST.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {DIST}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        f"[pytest_cluster.extensions]\nextra_clause = {MODULE}:EXTENSION\n")
    (site / f"{MODULE}.py").write_text(Path(__file__).read_text())


def on() -> bool:
    return os.environ.get(SWITCH) == "1"

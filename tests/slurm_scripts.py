"""The shipped SLURM scripts (examples/slurm) as a site installs them: the three paths at
the top set (SPEC, PYTHON, REPORTS), nothing else edited."""

from __future__ import annotations

import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "slurm"
PROLOG, HEALTHCHECK = "pytest-cluster-prolog.sh", "pytest-cluster-healthcheck.sh"


def installed(script: str, where: Path, spec: Path, reports: Path) -> Path:
    """The example script with this test's paths in place of /etc, /opt and /var ones."""
    text = (EXAMPLES / script).read_text(encoding="utf-8")
    for default, ours in (("/etc/pytest-cluster/contract.yaml", str(spec)),
                          ("/opt/pytest-cluster/bin/python", sys.executable),
                          ("/var/lib/pytest-cluster/prolog", str(reports / "prolog")),
                          ("/var/lib/pytest-cluster/healthcheck", str(reports / "health"))):
        assert text.count(default) <= 1, f"{script} sets {default} once, at the top"
        text = text.replace(default, ours)
    path = where / script
    path.write_text(text, encoding="utf-8")
    path.chmod(0o755)
    return path

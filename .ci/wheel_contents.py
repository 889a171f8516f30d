"""CI: every module and data file of the source tree is in the wheel, under its package."""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

wheel, repo = sys.argv[1], Path(sys.argv[2])
inside = {name for name in zipfile.ZipFile(wheel).namelist() if ".dist-info/" not in name}
expected = {str(p.relative_to(repo)) for p in (repo / "pytest_cluster").rglob("*")
            if p.is_file() and "__pycache__" not in p.parts}
expected |= {"pytest_cluster/acceptance/" + p.name for p in (repo / "acceptance").glob("*.py")}
missing = sorted(expected - inside)
if missing:
    sys.exit(f"wheel-check: missing from {Path(wheel).name}: {', '.join(missing)}")
print(f"wheel-check: {len(expected)} files of the source tree are all in {Path(wheel).name}")

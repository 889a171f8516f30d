"""One directory per run under the reports root, so no run overwrites another's evidence.

    reports/20261123T101500Z-trial-cluster/   report.html junit.xml results.jsonl
                                              verdict.json probes/
    reports/latest -> 20261123T101500Z-trial-cluster

The name is the run's start in UTC and the cluster's name (letters, digits, '.', '_', '-'
kept, anything else made '_'); a second run in the same second gets '-2', '-3', ...
`latest` points at the newest run that wrote evidence.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

from pytest_cluster.evidence.bundle.manifest import MANIFEST

LATEST = "latest"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def run_dir_name(cluster: str, started: float) -> str:
    """'20261123T101500Z-trial-cluster' for a run of `cluster` started at `started`."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(started))
    slug = _UNSAFE.sub("_", cluster).strip("._") or "cluster"
    return f"{stamp}-{slug[:80]}"


def create_run_dir(root: Path, cluster: str, started: float) -> Path:
    """Create (never reuse) this run's directory under `root`."""
    root.mkdir(parents=True, exist_ok=True)
    base = run_dir_name(cluster, started)
    for attempt in range(1, 1000):
        path = root / (base if attempt == 1 else f"{base}-{attempt}")
        try:
            path.mkdir()
        except FileExistsError:
            continue
        return path
    raise FileExistsError(f"{root}: 999 runs named {base} already")


def point_latest(run_dir: Path) -> bool:
    """Make `<root>/latest` point at `run_dir` (replaced atomically); a file or folder
    named latest that is not our link is left alone (False)."""
    link = run_dir.parent / LATEST
    if link.exists() and not link.is_symlink():
        return False
    partial = run_dir.parent / f".{LATEST}.{os.getpid()}"
    with contextlib.suppress(FileNotFoundError):
        partial.unlink()
    partial.symlink_to(run_dir.name, target_is_directory=True)
    os.replace(partial, link)
    return True


def remove_if_empty(run_dir: Path) -> None:
    """A run that collected nothing leaves no directory (only empty folders are removed)."""
    for path in sorted(run_dir.rglob("*"), reverse=True):
        if path.is_dir():
            with contextlib.suppress(OSError):
                path.rmdir()
    with contextlib.suppress(OSError):
        run_dir.rmdir()


def outside(run_dir: Path, reports: Iterable[str | None]) -> list[str]:
    """The reports (--junitxml, --html) put outside the run's directory: not in its
    manifest."""
    return [str(p) for p in reports if p and Path(p).resolve().parent != run_dir.resolve()]


def evidence_line(run_dir: Path, latest_moved: bool, elsewhere: Sequence[str]) -> str:
    """Where the evidence is: the files the run's directory holds (the manifest, written
    last, among them), where `latest` points, and any report put elsewhere."""
    names = sorted(p.name + ("/" if p.is_dir() else "") for p in run_dir.iterdir())
    names.append(MANIFEST)  # written last, after this line
    link = run_dir.parent / LATEST
    where = (f"{link} -> {run_dir.name}" if latest_moved else
             f"{link} left as it is (not a link pytest-cluster made)")
    text = f"evidence: {run_dir}/ ({', '.join(names)}); {where}"
    return text + (f"; also {', '.join(elsewhere)}" if elsewhere else "")

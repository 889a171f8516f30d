"""A probe run as it is shipped to a node (`python - ARGS`, its source on stdin) and its
answer read back: for the tests of the probes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from pytest_cluster.launchers.result import parse_probe_output
from pytest_cluster.probes import probe_source


def run_probe(name: str, *args: str, cwd: Path | None = None,
              env: dict[str, str] | None = None) -> dict[str, Any]:
    """As a node would: `python -I - ARGS`, source on stdin, no access to pytest_cluster."""
    done = subprocess.run([sys.executable, "-I", "-", *args], input=probe_source(name),
                          capture_output=True, text=True, timeout=120, cwd=cwd or "/",
                          env=env, check=True)
    return parse_probe_output(done.stdout, name)


def printed(probe: str, *args: str, timeout: float = 60) -> str:
    """The probe's stdout; TimeoutExpired past `timeout` seconds (a probe that hangs)."""
    return subprocess.run([sys.executable, "-", *args], input=probe_source(probe),
                          capture_output=True, text=True, check=True,
                          timeout=timeout).stdout


def answer(probe: str, stdout: str) -> dict[str, Any]:
    """The `data` of the probe's one JSON document (schema 1)."""
    document = json.loads(stdout)
    assert document["probe"] == probe and document["schema"] == 1
    data: dict[str, Any] = document["data"]
    return data

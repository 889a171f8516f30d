"""The host probe as it is shipped: this machine's CPU, memory and versions."""

from __future__ import annotations

import os
import sys

from tests.conftest import has_torch
from tests.shipped_probe import run_probe


def test_host_probe() -> None:
    data = run_probe("host")
    assert data["cpu"]["threads"] == os.cpu_count()
    assert data["cpu"]["cores"] >= 1
    assert data["memory"]["total_bytes"] > 2**28
    assert data["versions"]["kernel"] == os.uname().release
    assert data["versions"]["python"] == ".".join(map(str, sys.version_info[:3]))
    if has_torch():
        import importlib.metadata

        assert data["versions"]["torch"] == importlib.metadata.version("torch")


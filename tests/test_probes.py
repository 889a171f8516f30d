"""The probes' registry (probes/__init__.py): a probe's one shipped source, and a call of it."""

from __future__ import annotations

import pytest

from pytest_cluster.probes import ProbeCall, probe_source


def test_probe_sources_import_nothing_of_ours() -> None:
    for name in ("host", "storage", "import_latency"):
        imports = [line for line in probe_source(name).splitlines()
                   if line.startswith(("import ", "from "))]
        assert imports, name
        assert not [line for line in imports if "pytest_cluster" in line], name


def test_probe_call_key_is_stable_and_argument_sensitive() -> None:
    assert ProbeCall("host").key() == ProbeCall("host").key()
    assert ProbeCall("storage", ("--path", "/a")).key() != \
        ProbeCall("storage", ("--path", "/b")).key()
    with pytest.raises(ValueError, match="unknown probe 'nope'"):
        ProbeCall("nope")


"""probes/storage/payload.py: the types of what the probe prints hold every key it prints."""

from __future__ import annotations

import json
import signal
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_cluster.probes.storage import __main__ as probe
from pytest_cluster.probes.storage import payload
from pytest_cluster.probes.storage.parts import capacity, metadata


def keys(kind: Any) -> frozenset[str]:
    return frozenset(kind.__required_keys__ | kind.__optional_keys__)


def undeclared(value: dict[str, Any], kind: Any) -> list[str]:
    """The keys of `value` its TypedDict `kind` does not declare, and of each part."""
    hints = typing.get_type_hints(kind)
    found = [key for key in value if key not in hints]
    for key, inner in value.items():
        inner_kind = hints.get(key)
        if typing.get_origin(inner_kind) is list:
            inner_kind = typing.get_args(inner_kind)[0]
            found += [f"{key}.{name}" for item in inner
                      for name in undeclared(item, inner_kind)]
        elif inner_kind is not None and typing.is_typeddict(inner_kind):
            found += [f"{key}.{name}" for name in undeclared(inner, inner_kind)]
    return found


@pytest.fixture
def handlers() -> Iterator[None]:
    saved = {signum: signal.getsignal(signum)
             for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
    yield
    for signum, handler in saved.items():
        signal.signal(signum, handler)


@pytest.mark.usefixtures("handlers")
def test_every_key_the_probe_prints_is_declared(
        scratch: Path, capsys: pytest.CaptureFixture[str]) -> None:
    leftover = scratch / ".pytest-cluster-0ld12345"  # an older version's: reported
    leftover.mkdir()
    (leftover / "seq.bin").write_bytes(b"x")
    assert probe.main(["--path", str(scratch), "--io-size", str(2**20), "--files", "5"]) == 0
    data = json.loads(capsys.readouterr().out)["data"]
    assert data["leftovers"] and {"write", "read", "metadata", "capacity"} <= set(data)
    assert undeclared(data, payload.StorageData) == []


def test_a_key_the_types_do_not_declare_is_found() -> None:
    """The check above can fail."""
    data = {"path": "/x", "speed": 1, "write": {"bytes": 1, "iops": 2},
            "leftovers": [{"path": "/x/y", "owner": "z"}]}
    assert undeclared(data, payload.StorageData) == ["speed", "write.iops", "leftovers.owner"]


def test_a_parts_figures_are_its_types_keys(tmp_path: Path) -> None:
    assert set(capacity(str(tmp_path))) == keys(payload.Capacity) - {"error"}
    assert set(metadata(str(tmp_path), 2)) == keys(payload.Metadata) - {"error", "skipped"}


def test_each_part_can_be_its_error_or_skipped() -> None:
    assert keys(payload.Failed) == {"error"}
    for kind in (payload.Transfer, payload.Metadata):
        assert {"error", "skipped"} <= keys(kind)
    assert "error" in keys(payload.Capacity) and "error" in keys(payload.StorageData)

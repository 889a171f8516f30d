"""probes/nic/__main__.py: the probe's options, and the one document it prints."""

from __future__ import annotations

import getopt
import json
from pathlib import Path

import pytest

from pytest_cluster.probes.nic import __main__ as probe
from pytest_cluster.probes.nic.sysfs import Reader


def never(*_args: object) -> dict[str, str]:
    raise AssertionError("asked this machine's kernel while reading another tree")


def test_another_tree_is_read_without_ethtool_or_this_namespace(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "class/net/eth0").mkdir(parents=True)
    (tmp_path / "class/net/eth0/type").write_text("1\n")
    monkeypatch.setattr(Reader, "drvinfo", never)
    monkeypatch.setattr(probe, "own_interfaces", never)
    assert probe.main(["--sysfs", str(tmp_path), "--when", "start"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert (document["probe"], document["schema"]) == ("nic", 1)
    data = document["data"]
    assert (data["sysfs"], data["when"]) == (str(tmp_path), "start")
    assert [port["name"] for port in data["ports"]] == ["eth0"]


def test_without_when_the_reading_has_no_label(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    assert probe.main(["--sysfs", str(tmp_path / "none")]) == 0
    data = json.loads(capsys.readouterr().out)["data"]
    assert "when" not in data and "ports" not in data
    assert data["error"] == f"{tmp_path / 'none' / 'class' / 'net'} is not present: no sysfs " \
                            "to read"


def test_an_unknown_option_is_refused() -> None:
    with pytest.raises(getopt.GetoptError, match="option --bogus not recognized"):
        probe.main(["--bogus"])

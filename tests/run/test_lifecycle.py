"""What a run lets go of, and when (pytest_cluster/run/lifecycle.py): the run's one launcher,
shared by the `cluster` fixture and the inventory, is closed once at the end of the run,
after Ctrl-C, after SIGTERM and after a usage error; SIGTERM ends a run as Ctrl-C does.
The launcher here is the local one, recording when it is made and closed (a conftest of
the run under test puts it in the registry); over ssh the same close ends the shared
connections (tests/real/test_nothing_left.py counts what is left on real nodes)."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import pytest

from pytest_cluster.contract import load_spec
from pytest_cluster.errors import LaunchError
from pytest_cluster.run.lifecycle import CLOSED, RunLauncher

RECORDING = """\
import dataclasses
import pytest
from pytest_cluster.launchers.local import LocalLauncher
from pytest_cluster.contract.launchers import KINDS


def note(what):
    with open("launcher.log", "a") as log:
        log.write(what + "\\n")


class Recording(LocalLauncher):
    def __init__(self, spec):
        super().__init__(spec)
        note("made")

    def close(self):
        note("closed")


def pytest_configure(config):
    saved = KINDS["local"]
    KINDS["local"] = dataclasses.replace(saved, implementation="conftest:Recording")
    config.add_cleanup(lambda: KINDS.__setitem__("local", saved))
"""
SPEC = """\
cluster:
  name: lifecycle
  nodes: [n1, n2]
  launcher: local
  python: {python}
host: {{cpu_cores: ">= 1"}}
"""
PROBING = "def test_probe(cluster):\n    assert all(r.ok for r in cluster.host_all().values())\n"


def _run(pytester: pytest.Pytester, tests: str, conftest: str = "",
         subprocess: bool = False) -> pytest.RunResult:
    import sys

    pytester.makeconftest(RECORDING + conftest)
    (pytester.path / "trial.yaml").write_text(SPEC.format(python=sys.executable))
    pytester.makepyfile(test_mine=tests)
    args = ("--cluster=trial.yaml", "-p", "no:cacheprovider", "test_mine.py")
    if subprocess:
        return pytester.runpytest_subprocess(*args)
    return pytester.runpytest_inprocess(*args, no_reraise_ctrlc=True)


def _log(pytester: pytest.Pytester) -> list[str]:
    return (pytester.path / "launcher.log").read_text().split()


def _end(pytester: pytest.Pytester) -> dict[str, Any]:
    lines = (pytester.path / "reports" / "latest" / "results.jsonl").read_text().splitlines()
    end: dict[str, Any] = json.loads(lines[-1])
    return end


def test_one_launcher_serves_the_run_and_its_inventory_and_is_closed_once(
        pytester: pytest.Pytester) -> None:
    result = _run(pytester, PROBING)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()[-2000:]
    assert _log(pytester) == ["made", "closed"]
    inventory = json.loads((pytester.path / "reports" / "latest" / "inventory.json")
                           .read_text())
    assert inventory["complete"] is True and set(inventory["nodes"]) == {"n1", "n2"}


def test_ctrl_c_closes_the_launcher(pytester: pytest.Pytester) -> None:
    result = _run(pytester, PROBING + "\ndef test_stop():\n    raise KeyboardInterrupt\n")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert _log(pytester) == ["made", "closed"]


def test_a_usage_error_after_the_launcher_was_made_closes_it(
        pytester: pytest.Pytester) -> None:
    late = ("\n\ndef pytest_collection_modifyitems(config):\n"
            "    from pytest_cluster.run.lifecycle import run_launcher\n"
            "    run_launcher(config)\n"
            "    raise pytest.UsageError('refused after the launcher was made')\n")
    result = _run(pytester, PROBING, conftest=late)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*refused after the launcher was made"])
    assert _log(pytester) == ["made", "closed"]


@pytest.mark.slow
def test_sigterm_ends_a_run_as_ctrl_c_does(pytester: pytest.Pytester) -> None:
    """Results kept, the rest not reached, the run directory sealed, the launcher
    closed."""
    stop = ("\nimport os, signal, time\n\ndef test_term():\n"
            "    os.kill(os.getpid(), signal.SIGTERM)\n    time.sleep(60)\n\n"
            "def test_never():\n    pass\n")
    result = _run(pytester, PROBING + stop, subprocess=True)
    assert result.ret == pytest.ExitCode.INTERRUPTED, result.stdout.str()[-2000:]
    assert _log(pytester) == ["made", "closed"]
    assert result.parseoutcomes() == {"passed": 1}  # test_never was not reached
    end = _end(pytester)
    assert (end["type"], end["status"]) == ("end", "interrupted")
    assert (pytester.path / "reports" / "latest" / "manifest.intoto.json").is_file()


def test_sigterm_is_left_to_its_default_after_the_run(pytester: pytest.Pytester) -> None:
    before = signal.signal(signal.SIGTERM, signal.SIG_DFL)  # an earlier test may have set one
    try:
        assert _run(pytester, PROBING).ret == pytest.ExitCode.OK
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    finally:
        signal.signal(signal.SIGTERM, before)


def test_a_closed_run_launcher_makes_no_new_one(tmp_path: Path) -> None:
    import sys

    (tmp_path / "t.yaml").write_text(SPEC.format(python=sys.executable))
    owner = RunLauncher(load_spec(str(tmp_path / "t.yaml")))
    assert owner.get() is owner.get()
    owner.close()
    owner.close()  # once is enough; again does nothing
    with pytest.raises(LaunchError) as raised:
        owner.get()
    assert str(raised.value) == CLOSED == "the run's launcher is closed: the run has ended"

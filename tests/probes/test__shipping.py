"""probes/_shipping.py: every program of ours, as a node is sent it (one source), runs
there without this package, names its modules' files in a traceback, carries the shared
helpers it imports and no other, and is built the same byte for byte."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_cluster.probes import JOB_PROGRAMS, PROBES, probe_files, probe_source
from pytest_cluster.probes._shipping import CARRIED_AS, program_modules, program_source

#: Every program of ours: the probes (before any extension adds one) and the job programs.
PROGRAMS = sorted({*PROBES, *JOB_PROGRAMS})
#: The shipped text of a program that is several modules ends by running its main module.
RUNS_MAIN = "\nrunpy.run_module(MAIN"


def _imported(stderr: str) -> list[str]:
    """The modules `python -X importtime` says were imported."""
    return [line.rpartition("|")[2].strip() for line in stderr.splitlines()
            if line.startswith("import time:")]


@pytest.mark.parametrize("name", PROGRAMS)
def test_every_program_as_shipped_runs_without_this_package(name: str, tmp_path: Path) -> None:
    """As a node runs it: `python3 -I -` from an empty directory, nothing of pytest_cluster
    importable; asked for --help, it starts, imports nothing of ours (only what it carries)
    and fails on no import. Every module it carries imports there too."""
    text = probe_source(name)
    done = subprocess.run([sys.executable, "-X", "importtime", "-I", "-", "--help"],
                          check=False, input=text, capture_output=True, text=True, timeout=120,
                          cwd=tmp_path, env={**os.environ, "RANK": "0", "WORLD_SIZE": "1"})
    imported = _imported(done.stderr)
    assert "ModuleNotFoundError" not in done.stderr and "ImportError" not in done.stderr
    assert not [m for m in imported if m.split(".")[0] == "pytest_cluster"], imported
    carried = program_modules("pytest_cluster.probes", name)
    if RUNS_MAIN not in text:  # one file, sent as it is
        assert [*carried] == [name] and [text] == [*probe_files(name).values()]
        return
    assert CARRIED_AS in imported  # what it carries, not another copy found on the node
    each = "\n".join(f"importlib.import_module({CARRIED_AS + '.' + module!r})"
                      for module in carried)
    imports_all = text[:text.index(RUNS_MAIN) + 1] + f"import importlib\n{each}\nprint('ok')\n"
    done = subprocess.run([sys.executable, "-I", "-"], input=imports_all, check=False,
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (0, "ok\n", "")


def test_a_shipped_programs_traceback_names_its_module_file_and_line(tmp_path: Path) -> None:
    """A program of several modules, failing on the node, names the real file and line
    of each of its frames (the file is not there: each module is compiled with its name)."""
    done = subprocess.run([sys.executable, "-I", "-", "--bogus"], input=probe_source("nic"),
                          check=False, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    main = probe_files("nic")["pytest_cluster/probes/nic/__main__.py"].splitlines()
    line = next(n for n, text in enumerate(main, 1) if "getopt.getopt(" in text)
    assert done.returncode == 1
    assert f'File "pytest_cluster/probes/nic/__main__.py", line {line}, in main\n' \
        in done.stderr
    assert done.stderr.rstrip().endswith("option --bogus not recognized")


def test_a_program_carries_the_shared_helpers_it_imports_and_no_other() -> None:
    """probes/_lib: each program carries the helpers its modules import (and the package
    that holds them), not the others: the text sent stays the program's own."""
    lib = "pytest_cluster/probes/_lib/"
    helpers = {name: sorted(f.removeprefix(lib) for f in probe_files(name) if f.startswith(lib))
               for name in ("perftest", "storage", "host")}
    assert helpers == {"perftest": ["__init__.py", "command.py"],
                       "storage": ["__init__.py", "age.py"], "host": []}


def test_a_shipped_program_is_built_the_same_byte_for_byte() -> None:
    """The text shipped (the sim knows a job program by it) depends on the sources only:
    built again it is the same, and names no path of this machine."""
    for name in PROGRAMS:
        first = probe_source(name)
        program_modules.cache_clear()
        program_source.cache_clear()
        assert probe_source(name) == first, name
        assert str(Path(__file__).resolve().parent.parent) not in first, name

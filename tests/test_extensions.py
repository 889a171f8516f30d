"""Extensions (spec/extensions.py): an installed package adds a launcher, a spec section
with its clause and its probe, and the sim's answer to that probe, through the entry point
group `pytest_cluster.extensions`; nothing of ours changes. The example package
(examples/extension: a `bmc:` section, its `bmc` probe, a `here` launcher) is installed
into a temporary venv and a contract runs through it, then the suite's registry-driven
tests run there too and pass with it installed."""

from __future__ import annotations

import json
import shutil
import site
import subprocess
import sys
import venv
from collections.abc import Iterator
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

from pytest_cluster.errors import ExtensionError
from pytest_cluster.spec import extensions
from pytest_cluster.spec.extensions import GROUP, Extension, unique

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "extension"
#: The suite's tests that derive what they expect from the registries: with an extension
#: installed they must still pass (a test that pins a hand list would not).
REGISTRY_DRIVEN = ("tests/test_spec.py", "tests/test_spec_slips.py", "tests/test_clauses.py",
                   "tests/test_levels.py", "tests/test_layers.py", "tests/test_launchers.py",
                   "tests/test_plugin.py", "tests/test_gpus.py", "tests/test_scale.py")

# -- loading: what a broken or clashing extension says ---------------------------------------


@pytest.fixture
def installed(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[EntryPoint]]:
    """The entry points `extensions()` finds: the test's, not the environment's; the
    problems found so far set aside."""
    points: list[EntryPoint] = []
    monkeypatch.setattr(extensions, "entry_points", lambda group: [
        p for p in points if p.group == group])
    monkeypatch.setattr(extensions, "_PROBLEMS", {})
    extensions.extensions.cache_clear()
    yield points
    extensions.extensions.cache_clear()


GOOD = Extension("good")


def test_an_installed_extension_is_loaded_by_its_entry_point(
        installed: list[EntryPoint]) -> None:
    installed.append(EntryPoint("good", f"{__name__}:GOOD", GROUP))
    installed.append(EntryPoint("elsewhere", f"{__name__}:GOOD", "another.group"))
    assert extensions.extensions() == (GOOD,)
    assert extensions.problems() == ()
    extensions.check()  # nothing to say


@pytest.mark.parametrize(("value", "message"), [
    (f"{__name__}:ROOT", "extension bad = tests.test_extensions:ROOT (entry point group "
                         f"{GROUP}) names a PosixPath, not a pytest_cluster.Extension"),
    ("no_such_module_here:EXTENSION", "extension bad = no_such_module_here:EXTENSION (entry "
     "point group pytest_cluster.extensions) cannot be loaded: ModuleNotFoundError: No module "
     "named 'no_such_module_here'"),
    (f"{__name__}:NOT_THERE", "cannot be loaded: AttributeError: "),
])
def test_an_extension_that_cannot_be_loaded_is_left_out_and_named(
        installed: list[EntryPoint], value: str, message: str) -> None:
    """Never an import error (a plain pytest run is untouched): left out, said, and a run
    refuses to start (`check`, asked before the spec is read)."""
    installed.append(EntryPoint("bad", value, GROUP))
    installed.append(EntryPoint("good", f"{__name__}:GOOD", GROUP))
    assert extensions.extensions() == (GOOD,)
    assert len(extensions.problems()) == 1 and message in extensions.problems()[0]
    with pytest.raises(ExtensionError, match=r"^pytest-cluster: 1 problem\(s\) with the "
                                             r"installed extensions \(fix or uninstall them\): "
                                             r"extension bad = ") as caught:
        extensions.check()
    assert message in str(caught.value)


def test_a_name_taken_twice_is_left_out_and_named(installed: list[EntryPoint]) -> None:
    installed.extend([EntryPoint("a", f"{__name__}:GOOD", GROUP),
                      EntryPoint("b", f"{__name__}:GOOD", GROUP)])
    assert extensions.extensions() == (GOOD,)
    assert unique([("local", 1), ("ssh", 2), ("local", 3)], "the launcher kinds") == [1, 2]
    assert extensions.problems() == (
        "the installed extensions: 'good' is declared twice (an installed extension repeats "
        "a name that is already taken; the second is left out)",
        "the launcher kinds: 'local' is declared twice (an installed extension repeats a name "
        "that is already taken; the second is left out)")
    with pytest.raises(ExtensionError, match=r"2 problem\(s\)"):
        extensions.check()


def test_a_name_of_ours_is_not_an_extensions_to_take(installed: list[EntryPoint]) -> None:
    """An extension's probe named as one of our job programs (sent by job_node) would
    replace it on every node: left out, and said."""
    from pytest_cluster.probes import JOB_PROGRAMS, PROBES

    ours = (*PROBES, *JOB_PROGRAMS)
    assert extensions.free([("pingpong", 1), ("bmc", 2), ("bmc", 3)], ours,
                           "the probes") == {"bmc": 2}  # nor another extension's
    assert extensions.problems() == tuple(
        f"the probes: {name!r} is declared twice (an installed extension repeats a name "
        "that is already taken; the second is left out)" for name in ("pingpong", "bmc"))


def test_a_probe_file_that_is_not_there_is_named(installed: list[EntryPoint],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys.modules[__name__], "GOOD",
                        Extension("good", probes={"bmc": "/nowhere/bmc.py"}), raising=True)
    installed.append(EntryPoint("good", f"{__name__}:GOOD", GROUP))
    assert extensions.added_probes() == []
    assert extensions.problems() == ("extension good: probe bmc: no file at /nowhere/bmc.py",)


# -- the example package, installed as a user installs it ------------------------------------


@pytest.fixture(scope="module")
def extended(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv that sees this environment's packages (pytest-cluster among them) and has
    the example extension installed from a copy of its source, by pip."""
    where = tmp_path_factory.mktemp("extended")
    venv.EnvBuilder(with_pip=False).create(where / "venv")
    python = where / "venv" / "bin" / "python"
    purelib = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()"
                              "['purelib'])"], capture_output=True, text=True,
                             check=True).stdout.strip()
    ours = [p for p in site.getsitepackages() if Path(p).is_dir()]
    Path(purelib, "outer.pth").write_text(
        "".join(f"import site; site.addsitedir({p!r})\n" for p in ours))
    source = shutil.copytree(EXAMPLE, where / "source")  # pip builds in the source tree
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install",
                    "--quiet", "--no-deps", "--no-build-isolation", "--no-index",
                    str(source)], check=True, capture_output=True, cwd=where)
    return python


SPEC = """\
cluster: {name: extended, nodes: [localhost], launcher: here}
bmc:
  fans: "%s"
"""


def run_in(python: Path, directory: Path, *args: str,
           env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(python), "-m", "pytest", "-p", "no:cacheprovider", *args],
                          capture_output=True, text=True, cwd=directory, timeout=600,
                          env=env, check=False)


@pytest.mark.slow
def test_a_contract_runs_through_an_installed_launcher_section_and_probe(
        extended: Path, tmp_path: Path) -> None:
    """`here` (the extension's launcher) runs `bmc` (its probe) for `bmc.fans` (its
    section's clause): 3 fans measured against '>= 2' passes, against '>= 4' fails with
    both numbers; simulated nodes give the extension's answer (8 fans); a slip in the
    section's keys is a usage error naming the key."""
    import os

    env = {**os.environ, "PCX_BMC_FANS": "3"}
    (tmp_path / "t.yaml").write_text(SPEC % ">= 2")
    passed = run_in(extended, tmp_path, "--cluster=t.yaml", env=env)
    assert passed.returncode == 0, passed.stdout[-3000:] + passed.stderr[-3000:]
    assert "test_bmc_fans[localhost] PASSED" in passed.stdout or "1 passed" in passed.stdout
    line = next(json.loads(text) for text in
                (tmp_path / "reports" / "latest" / "results.jsonl").read_text().splitlines()
                if '"bmc.fans"' in text)
    assert (line["clause"], line["outcome"], line["measured"], line["node"]) == (
        "bmc.fans", "passed", 3, "localhost")
    (tmp_path / "t.yaml").write_text(SPEC % ">= 4")
    failed = run_in(extended, tmp_path, "--cluster=t.yaml", env=env)
    assert failed.returncode == 1, failed.stdout[-3000:]
    assert "localhost fans: measured 3 < required 4" in failed.stdout, failed.stdout[-3000:]
    assert "REJECTED localhost: 1 clause(s) failed: bmc.fans" in failed.stdout
    (tmp_path / "t.yaml").write_text(  # the extension's answer for simulated nodes
        "cluster: {name: sim, nodes: 'n[1-2]', launcher: sim}\nsim: {gpu_model: H100-SXM-80GB, "
        "gpus_per_node: 8}\nbmc: {fans: '>= 6'}\n")
    simulated = run_in(extended, tmp_path, "--cluster=t.yaml", env=env)
    assert simulated.returncode == 0, simulated.stdout[-3000:] + simulated.stderr[-3000:]
    assert "test_extensions.py .." in simulated.stdout and "SIMULATED" in simulated.stdout
    (tmp_path / "t.yaml").write_text(SPEC.replace("fans", "fnas") % ">= 4")
    slip = run_in(extended, tmp_path, "--cluster=t.yaml", env=env)
    assert slip.returncode == 4, slip.stdout[-2000:] + slip.stderr[-2000:]
    assert "t.yaml:3: bmc.fnas: unknown key" in slip.stdout + slip.stderr
    assert "did you mean 'fans'" in slip.stdout + slip.stderr


@pytest.mark.slow
def test_the_registry_driven_tests_pass_with_the_extension_installed(extended: Path) -> None:
    """The suite's tests that read the registries, run where the extension is installed:
    its clause, section, probe and launcher are in every registry, and they pass."""
    shown = subprocess.run([str(extended), "-c", "from pytest_cluster.spec.launchers import "
                            "KINDS; from pytest_cluster.spec.loader import LISTED; from "
                            "pytest_cluster.probes import PROBES; print(list(KINDS), "
                            "LISTED[-1], 'bmc' in PROBES)"], capture_output=True, text=True,
                           cwd=ROOT, check=True).stdout
    assert shown.strip() == "['local', 'sim', 'ssh', 'slurm', 'here'] bmc True"
    result = run_in(extended, ROOT, "-q", "-x", *REGISTRY_DRIVEN)
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-3000:]


@pytest.mark.slow
def test_a_broken_installed_extension_stops_a_run_and_no_plain_pytest(extended: Path,
                                                                   tmp_path: Path) -> None:
    """A package whose entry point names a module that is not there: `pytest --cluster`
    is a usage error naming it, before the spec is read; a plain pytest run (no --cluster)
    goes on as before."""
    purelib = Path(subprocess.run([str(extended), "-c", "import sysconfig; print(sysconfig."
                                   "get_paths()['purelib'])"], capture_output=True, text=True,
                                  check=True).stdout.strip())
    info = purelib / "broken_ext-0.1.dist-info"
    info.mkdir()
    try:
        (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-ext\nVersion: 0.1\n")
        (info / "entry_points.txt").write_text(f"[{GROUP}]\nbroken = no_such_ext_module:X\n")
        (tmp_path / "t.yaml").write_text(SPEC % ">= 2")
        (tmp_path / "test_plain.py").write_text("def test_plain():\n    assert True\n")
        refused = run_in(extended, tmp_path, "--cluster=t.yaml")
        plain = run_in(extended, tmp_path, "test_plain.py")
    finally:
        shutil.rmtree(info)
    said = refused.stdout + refused.stderr
    assert refused.returncode == 4, said[-3000:]
    assert ("ERROR: pytest-cluster: 1 problem(s) with the installed extensions (fix or "
            "uninstall them): extension broken = no_such_ext_module:X (entry point group "
            f"{GROUP}, from broken-ext 0.1) cannot be loaded: ModuleNotFoundError") in said, said
    assert len(said) < 2000 and "Traceback" not in said
    assert plain.returncode == 0 and "1 passed" in plain.stdout, plain.stdout[-2000:]


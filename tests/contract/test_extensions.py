"""Extensions (contract/extensions.py): an installed package adds a launcher, a spec section
with its clause and its probe, and the sim's answer to that probe, through the entry point
group `pytest_cluster.extensions`; nothing of ours changes. The example package
(examples/extension: a `bmc:` section, its `bmc` probe, a `here` launcher) is installed
into a temporary venv and a contract runs through it, then the suite's registry-driven
tests run there too and pass with it installed."""

from __future__ import annotations

import json
import math
import os
import shutil
import site
import subprocess
import sys
import venv
from collections.abc import Iterator, Mapping, Sequence
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

from pytest_cluster.contract import extensions, parse_spec
from pytest_cluster.contract.extensions import GROUP, Extension, unique
from pytest_cluster.errors import BadAnswer

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "extension"
#: The suite's tests that derive what they expect from the registries: with an extension
#: installed they must still pass (a test that pins a hand list would not).
REGISTRY_DRIVEN = ("tests/contract/test_loader.py", "tests/contract/test_loader_slips.py",
                   "tests/contract/test_clauses.py", "tests/contract/test_levels.py",
                   "tests/test_layers.py", "tests/launchers/test_launchers.py",
                   "tests/test_launchers.py", "tests/launchers/test_base.py",
                   "tests/test_plugin.py", "tests/contract/sections/test_gpus.py",
                   "tests/run/test_scale.py",
                   "tests/run/test_memory.py", "tests/run/test_level_select.py")

# -- loading: what a broken or clashing extension says ---------------------------------------


@pytest.fixture
def installed(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[EntryPoint]]:
    """The entry points `load` finds: the test's, not the environment's; this process's
    extensions and registries set aside (a fresh state: nothing is added to them)."""
    points: list[EntryPoint] = []
    monkeypatch.setattr(extensions, "entry_points", lambda group: [
        p for p in points if p.group == group])
    monkeypatch.setattr(extensions, "_STATE", extensions._State())
    yield points


GOOD = Extension("good")
SHAPELESS = Extension("shapeless", clauses=5)  # type: ignore[arg-type]
ANSWERLESS = Extension("answerless", sim={"bmc": 8})  # type: ignore[dict-item]


def test_an_installed_extension_is_loaded_by_its_entry_point(
        installed: list[EntryPoint]) -> None:
    installed.append(EntryPoint("good", f"{__name__}:GOOD", GROUP))
    installed.append(EntryPoint("elsewhere", f"{__name__}:GOOD", "another.group"))
    assert extensions.extensions() == ()  # nothing before `load` (a run with --cluster)
    assert extensions.load() == ()  # nothing to say
    assert extensions.extensions() == (GOOD,)


@pytest.mark.parametrize(("value", "message"), [
    (f"{__name__}:ROOT", "extension bad = tests.contract.test_extensions:ROOT (entry point group "
                         f"{GROUP}) names a PosixPath, not a pytest_cluster.Extension: left out"),
    ("no_such_module_here:EXTENSION", "extension bad = no_such_module_here:EXTENSION (entry "
     "point group pytest_cluster.extensions) cannot be loaded: ModuleNotFoundError: No module "
     "named 'no_such_module_here': left out"),
    (f"{__name__}:NOT_THERE", "cannot be loaded: AttributeError: "),
    (f"{__name__}:SHAPELESS", "extension bad = tests.contract.test_extensions:SHAPELESS "
                              f"(entry point group {GROUP}): its clauses are not a tuple of "
                              "Declaration: left out"),
    (f"{__name__}:ANSWERLESS", "its sim answers are not all callable: left out"),
    # before: Python's "AttributeError: 'NoneType' object has no attribute 'group'"
    *((value, f"extension bad = {value} (entry point group {GROUP}): its value is not "
              "'module:object' (a module, and the Extension in it, by their dotted names): "
              "left out") for value in (f"{__name__}:", ":::[x", "a b:c", f"{__name__}")),
])
def test_an_extension_that_cannot_be_loaded_is_left_out_and_named(
        installed: list[EntryPoint], value: str, message: str) -> None:
    """Never an import error: left out, said, and the others loaded."""
    installed.append(EntryPoint("bad", value, GROUP))
    installed.append(EntryPoint("good", f"{__name__}:GOOD", GROUP))
    found = extensions.load()
    assert extensions.extensions() == (GOOD,)
    assert len(found) == 1 and message in found[0]
    assert extensions.left_out() == found


#: Modules that misbehave at import, and what is said of each (LIMIT_S: the time limit)
LIMIT_S = 0.3
HOSTILE = {
    "exits": ("import sys\nsys.exit(3)\n", "stopped loading with SystemExit: 3: left out"),
    "interrupts": ("raise KeyboardInterrupt\n", "stopped loading with KeyboardInterrupt: "
                                                 "left out"),
    "loops": ("while True:\n    pass\n",
              f"did not finish loading within {LIMIT_S:g} s (a loop at import?; "
              "--cluster-extension-limit): left out"),
    "sleeps": ("import time\ntime.sleep(3600)\n", f"did not finish loading within {LIMIT_S:g} s"),
    "raises": ("raise RuntimeError('first line\\n' + 'x' * 100000)\n",
               "cannot be loaded: RuntimeError: first line\\nxxx"),
    # a clause declared without its fault (code, action, who acts) is no clause
    "faultless": ("from pytest_cluster import Declaration, Dim, Extension, Reads, Value\n"
                  "EXTENSION = Extension('faultless', clauses=(Declaration('bmc', 'fans', "
                  "Value.QUANTITY, Dim.COUNT, reads=Reads('bmc', 'sensors', 'fans')),))\n",
                  "cannot be loaded: ValueError: clause bmc.fans: declare its fault, "
                  "fault=Fault(code, action, actor) (docs/faults.md): left out"),
}


@pytest.fixture
def on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder on sys.path for the test's modules."""
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_whatever_an_import_does_the_extension_is_left_out_in_one_line(
        installed: list[EntryPoint], on_path: Path, case: str,
        capfd: pytest.CaptureFixture[str]) -> None:
    """SystemExit and KeyboardInterrupt are caught like any error, a loop is stopped at
    the time limit: each said once, in one bounded line naming the entry point; the
    extensions after it are loaded."""
    body, message = HOSTILE[case]
    (on_path / f"hostile_{case}.py").write_text(body)
    installed.append(EntryPoint("a_hostile", f"hostile_{case}:EXTENSION", GROUP))
    installed.append(EntryPoint("good", f"{__name__}:GOOD", GROUP))
    found = extensions.load(LIMIT_S)
    assert extensions.extensions() == (GOOD,)
    assert len(found) == 1, found
    assert found[0].startswith(f"extension a_hostile = hostile_{case}:EXTENSION (entry point "
                               f"group {GROUP}")
    assert message in found[0]
    assert "\n" not in found[0] and len(found[0]) <= 2 * extensions.MAX_SAID
    assert capfd.readouterr() == ("", "")


def test_what_an_import_prints_is_counted_and_cut_never_shown(
        installed: list[EntryPoint], on_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """Printed by print() and written to the file descriptors alike: the run sees none of
    it, the line says how much and its first characters; the extension is loaded."""
    (on_path / "noisy.py").write_text(
        "import os, sys\nfrom pytest_cluster import Extension\nprint('hello\\nthere')\n"
        "for _ in range(32):\n    sys.stdout.write('x' * (1 << 20))\n"
        "for _ in range(4):\n    os.write(2, b'y' * (1 << 20))\n"
        "sys.stdout.buffer.write(b'z' * (1 << 20))\nEXTENSION = Extension('noisy')\n")
    installed.append(EntryPoint("noisy", "noisy:EXTENSION", GROUP))
    found = extensions.load()
    assert [e.name for e in extensions.extensions()] == ["noisy"]
    size = len("hello\nthere\n") + 37 * (1 << 20)
    assert found == (f"extension noisy = noisy:EXTENSION (entry point group {GROUP}) printed "
                     f"{size} character(s) while it was loaded (not shown; the first 200: "
                     f"'hello\\nthere\\n{'x' * 188}')",)
    assert capfd.readouterr() == ("", "")


def test_a_probe_file_is_read_with_a_size_cap(installed: list[EntryPoint],
                                              monkeypatch: pytest.MonkeyPatch,
                                              tmp_path: Path) -> None:
    """A 2 GB file (sparse: it costs no disk), a FIFO (it would block) and a missing file:
    each leaves its extension out (its clauses could not be checked), named with the
    extension and the file; a good one is read when the extension is loaded."""
    huge = tmp_path / "huge.py"
    with huge.open("wb") as file:
        file.truncate(2 << 30)
    fifo = tmp_path / "fifo.py"
    os.mkfifo(fifo)
    (tmp_path / "fine.py").write_text("print('{}')\n")
    said = "extension {0} = tests.contract.test_extensions:{0} (entry point group " \
           "pytest_cluster.extensions): probe"
    files: dict[str, str | Path] = {"HUGE": huge, "FIFO": fifo, "GONE": "/nowhere/bmc.py",
                                    "FINE": tmp_path / "fine.py"}
    for name, path in files.items():
        monkeypatch.setattr(sys.modules[__name__], name, Extension(
            name, probes={"fine": tmp_path / "fine.py", "bmc": path}), raising=False)
        installed.append(EntryPoint(name, f"{__name__}:{name}", GROUP))
    assert extensions.load() == (
        f"{said.format('FIFO')} bmc: its file {fifo} cannot be read: not a regular file: "
        "left out",
        f"{said.format('GONE')} bmc: its file /nowhere/bmc.py cannot be read: No such file or "
        "directory: left out",
        f"{said.format('HUGE')} bmc: its file {huge} cannot be read: {2 << 30} bytes, more "
        f"than the {extensions.MAX_PROBE_BYTES} a probe may be: left out")
    assert [e.name for e in extensions.extensions()] == ["FINE"]
    assert extensions.added_probes() == [("fine", "print('{}')\n"), ("bmc", "print('{}')\n")]


def test_a_name_taken_twice_is_left_out_and_named(installed: list[EntryPoint]) -> None:
    installed.extend([EntryPoint("a", f"{__name__}:GOOD", GROUP),
                      EntryPoint("b", f"{__name__}:GOOD", GROUP)])
    extensions.load()
    assert extensions.extensions() == (GOOD,)
    assert unique([("local", 1), ("ssh", 2), ("local", 3)], "the launcher kinds") == [1, 2]
    assert extensions.problems() == (
        "the installed extensions: 'good' is declared twice (an installed extension repeats "
        "a name that is already taken; the second is left out)",
        "the launcher kinds: 'local' is declared twice (an installed extension repeats a name "
        "that is already taken; the second is left out)")


def test_a_name_of_ours_is_not_an_extensions_to_take(installed: list[EntryPoint]) -> None:
    """An extension's probe named as one of our job programs (sent by job_node) would
    replace it on every node: left out, and said."""
    from pytest_cluster.probes import PROBES
    from pytest_cluster.probes.jobs import JOB_PROGRAMS

    ours = (*PROBES, *JOB_PROGRAMS)
    assert extensions.free([("pingpong", 1), ("bmc", 2), ("bmc", 3)], ours,
                           "the probes") == {"bmc": 2}  # nor another extension's
    assert extensions.problems() == tuple(
        f"the probes: {name!r} is declared twice (an installed extension repeats a name "
        "that is already taken; the second is left out)" for name in ("pingpong", "bmc"))


@pytest.mark.parametrize(("answer", "said"), [
    ({"sensors": {"fans": math.nan}}, "is not strict JSON (Out of range float values are not "
                                      "JSON compliant"),
    ({"sensors": {"fans": math.inf}}, "is not strict JSON"),
    (["fans"], "is a list, not a map of the probe's data"),
    ({"sensors": object()}, "is not strict JSON (Object of type object is not JSON "
                            "serializable)"),
])
def test_a_sim_answer_that_is_not_a_payload_is_bad_output_naming_the_extension(
        answer: object, said: str) -> None:
    checked = extensions.checked_answer("extension bmc (pcx-bmc 0.1)", "bmc",
                                        lambda *_: answer)  # type: ignore[arg-type]
    with pytest.raises(BadAnswer) as caught:
        checked(None, None, "n1", ())
    assert str(caught.value).startswith("extension bmc (pcx-bmc 0.1): its sim answer to probe "
                                        f"bmc {said}")
    nothing: dict[str, dict[str, int]] = {}
    raising = extensions.checked_answer("extension bmc", "bmc", lambda *_: nothing["x"])
    with pytest.raises(ValueError, match=r"^extension bmc: its sim answer to probe bmc raised "
                                         r"KeyError: 'x'$"):
        raising(None, None, "n1", ())
    fine = {"sensors": {"fans": 8, "ids": (1, 2)}}
    assert extensions.checked_answer("e", "bmc", lambda *_: fine)(None, None, "n1", ()) == {
        "sensors": {"fans": 8, "ids": [1, 2]}}


class _Hostile(Mapping[str, object]):
    """A map whose every read raises: its code runs when it is read."""

    def __getitem__(self, key: str) -> object:
        raise RuntimeError("read")

    def __iter__(self) -> Iterator[str]:
        raise RuntimeError("read")

    def __len__(self) -> int:
        return 1


def _interrupts(*_: object) -> dict[str, object]:
    raise KeyboardInterrupt


def test_a_sim_answer_that_interrupts_or_never_returns_is_its_failure_naming_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Before, a KeyboardInterrupt from an extension's sim answer ended the run as Ctrl-C
    did, a sleep hung it, and a map of its own class raised its own error unnamed."""
    import time

    monkeypatch.setattr(extensions, "SIM_ANSWER_LIMIT_S", 0.2)
    for answer, said in ((_interrupts, "raised KeyboardInterrupt"),
                         (lambda *_: time.sleep(3600), "did not return within 0.2 s: left "
                                                       "running")):
        checked = extensions.checked_answer("extension bmc", "bmc",
                                            answer)  # type: ignore[arg-type]
        with pytest.raises(ValueError) as caught:
            checked(None, None, "n1", ())
        assert str(caught.value) == f"extension bmc: its sim answer to probe bmc {said}"
    with pytest.raises(BadAnswer, match=r"^extension bmc: its sim answer to probe bmc is not "
                                        r"strict JSON \(read\)$"):
        extensions.checked_answer("extension bmc", "bmc", lambda *_: _Hostile())(
            None, None, "n1", ())


def test_a_launchers_answer_of_its_own_classes_is_read_guarded() -> None:
    """A map whose reads raise, a result of a class of its own: the tool's fault naming the
    extension, where before the map's RuntimeError was raised unnamed."""
    from pytest_cluster.contract.model import ClusterSpec
    from pytest_cluster.launchers import ErrorKind, Launcher, ProbeResult
    from pytest_cluster.launchers.checked import checked
    from pytest_cluster.launchers.local import LocalLauncher
    from pytest_cluster.probes import ProbeCall

    class Subclassed(ProbeResult):
        pass

    for answer, said in ((_Hostile(), "raised RuntimeError: read"),
                         ({"n1": Subclassed("n1", "host", {})},
                          "returned a Subclassed for this node, not a ProbeResult")):
        class Returns(LocalLauncher):
            given: object = answer

            def run(self, call: ProbeCall, nodes: Sequence[str],
                    timeout_s: float) -> dict[str, ProbeResult]:
                return self.given  # type: ignore[return-value]

        launcher: Launcher = checked(Returns, "extension x")(
            ClusterSpec("t", ("n1",), "local", sys.executable, 4, 8))
        result = launcher.run(ProbeCall("host"), ["n1"], 1.0)["n1"]
        assert (result.error, result.message) == (ErrorKind.CONTROLLER,
                                                  f"the launcher of extension x {said}")


def test_each_node_gets_a_result_whatever_an_extensions_launcher_returns() -> None:
    """Not a map, a node missing, another node's result, data with a NaN: each node of the
    call gets a result naming the extension; the tool's fault (controller) where the
    launcher's answer is unusable, the node's bad output where its data is not finite."""
    from pytest_cluster.launchers import ErrorKind, ProbeResult
    from pytest_cluster.launchers.checked import checked_results
    from pytest_cluster.probes import ProbeCall

    call, nodes, owner = ProbeCall("host"), ("n1", "n2"), "extension x (x 0.1)"
    good = ProbeResult("n1", "host", {"cpu": {"cores": 8}})

    def kinds(answer: object) -> list[tuple[ErrorKind | None, str]]:
        found = checked_results(owner, call, nodes, answer)
        assert list(found) == list(nodes)
        assert all(r.message.startswith(f"the launcher of {owner}") for r in found.values()
                   if r.error is not None)
        return [(r.error, r.message.removeprefix(f"the launcher of {owner}"))
                for r in found.values()]

    controller = ErrorKind.CONTROLLER
    assert kinds(["garbage"]) == [(controller, " returned a list, not a map of node to "
                                               "ProbeResult")] * 2
    assert kinds({"n1": good}) == [(None, ""), (controller, " returned a NoneType for this "
                                                            "node, not a ProbeResult")]
    assert kinds({"n1": good, "n2": good}) == [
        (None, ""), (controller, " returned the result of n1's host probe for this node")]
    (kept, (kind, said)) = kinds({"n1": good, "n2": ProbeResult(
        "n2", "host", {"cpu": {"cores": math.nan}})})
    assert kept == (None, "") and kind is ErrorKind.BAD_OUTPUT
    assert said.startswith(": its data is not strict JSON (Out of range float values are not "
                           "JSON compliant")


# -- installed as a distribution: what a run and a plain pytest run do -----------------------


def install(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, module: str,
            text: str, dist: str = "hostile-ext") -> Path:
    """A distribution `dist` 0.1 whose entry point `ext` names `module`:EXTENSION, its
    module `text`, in a folder on the PYTHONPATH of the runs the test starts."""
    site_dir = pytester.path / "site"
    info = site_dir / f"{dist.replace('-', '_')}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{GROUP}]\next = {module}:EXTENSION\n")
    (site_dir / f"{module}.py").write_text(text)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site_dir), str(ROOT)]))
    return site_dir


#: An extension module that says it was imported (a file), then exits
EXITS = "import pathlib\npathlib.Path('imported').touch()\nraise SystemExit(3)\n"
SIM_SPEC = ("cluster: {name: t, nodes: 'n[1-2]', launcher: sim}\nhost: {cpu_cores: '>= 1'}\n"
            "sim: {gpus_per_node: 8}\n")


def test_a_plain_pytest_run_never_imports_an_extension(pytester: pytest.Pytester,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Before, the registries loaded the extensions when the plugin was loaded: every
    pytest run in the environment ran the extension's import (here: exit 3, silently)."""
    install(pytester, monkeypatch, "exits_ext", EXITS)
    pytester.makepyfile(test_plain="def test_plain():\n    assert True\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "test_plain.py",
                                           timeout=120)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()[-2000:]
    result.assert_outcomes(passed=1)
    assert not (pytester.path / "imported").exists()


def test_a_run_goes_on_without_an_extension_that_exits_at_import(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """With --cluster the extension is imported, its SystemExit caught: said once, in one
    warning naming its entry point and distribution; the run checks the spec without it."""
    install(pytester, monkeypatch, "exits_ext", EXITS)
    pytester.makefile(".yaml", trial=SIM_SPEC)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--cluster=trial.yaml",
                                           "--cluster-reports=", timeout=120)
    said = result.stdout.str()
    assert (pytester.path / "imported").exists()
    assert result.ret == pytest.ExitCode.OK, said[-3000:]
    line = (f"pytest-cluster: extension ext = exits_ext:EXTENSION (entry point group {GROUP}, "
            "from hostile-ext 0.1) stopped loading with SystemExit: 3: left out")
    assert said.count(line) == 1, said[-3000:]


def test_a_spec_that_needs_what_a_left_out_extension_declares_names_it(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    install(pytester, monkeypatch, "broken_ext", "raise ImportError('no bmc library')\n")
    pytester.makefile(".yaml", trial="cluster: {name: t, nodes: [localhost], launcher: here}\n"
                                     "bmc: {fans: '>= 2'}\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--cluster=trial.yaml",
                                           timeout=120)
    said = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, said[-3000:]
    assert ("(an installed extension left out of this run may declare what the spec asks "
            f"for:\n  extension ext = broken_ext:EXTENSION (entry point group {GROUP}, from "
            "hostile-ext 0.1) cannot be loaded: ImportError: no bmc library: left out)"
            ) in said, said[-3000:]
    assert "Traceback" not in said


#: An extension with a launcher kind (`garbage`, its class named by CLASS), a `bmc` section
#: read by the `bmc` probe and the sim's answer to it (ANSWER)
LAUNCHING = """\
from pathlib import Path
from pytest_cluster import (Actor, Declaration, Dim, Extension, ExtensionSection, Fault,
                            LauncherKind, Reads, Value)
from pytest_cluster.launchers.local import LocalLauncher


class Garbage(LocalLauncher):
    name = "garbage"

    def run(self, call, nodes, timeout_s):
        return {node: "nonsense" for node in nodes}


EXTENSION = Extension(
    name="bmc",
    clauses=(Declaration("bmc", "fans", Value.QUANTITY, Dim.COUNT,
                         reads=Reads("bmc", "sensors", "fans"),
                         fault=Fault("PC-BMC-FANS", "replace the fan", Actor.PROVIDER_HARDWARE)),),
    sections=(ExtensionSection("bmc", probes=("bmc",)),),
    launchers=(LauncherKind("garbage", "launching_ext:CLASS", python=None, one_host=True),),
    probes={"bmc": Path(__file__)},
    sim={"bmc": lambda sim, links, node, args: {"sensors": {"fans": ANSWER}}},
)
"""


def test_a_launcher_kind_naming_a_missing_class_is_a_usage_error(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before, an INTERNALERROR (AttributeError) when the launcher was first asked for."""
    install(pytester, monkeypatch, "launching_ext",
            LAUNCHING.replace("CLASS", "NotThere").replace("ANSWER", "8"))
    pytester.makefile(".yaml", trial="cluster: {name: t, nodes: [localhost], "
                                     "launcher: garbage}\nhost: {cpu_cores: '>= 1'}\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--cluster=trial.yaml",
                                           timeout=120)
    said = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, said[-3000:]
    assert ("trial.yaml: cluster.launcher: launcher garbage of extension ext = launching_ext:"
            f"EXTENSION (entry point group {GROUP}, from hostile-ext 0.1): launching_ext:NotThere "
            "cannot be imported: AttributeError: ") in said, said[-3000:]
    assert "INTERNALERROR" not in said


def test_what_an_extensions_launcher_returns_is_checked_naming_it(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """A launcher that returns a string for a node: the node's result is the tool's fault
    (not the node's), its message naming the extension; never Python's `to_json` error."""
    install(pytester, monkeypatch, "launching_ext",
            LAUNCHING.replace("CLASS", "Garbage").replace("ANSWER", "8"))
    pytester.makefile(".yaml", trial="cluster: {name: t, nodes: [localhost], "
                                     "launcher: garbage}\nhost: {cpu_cores: '>= 1'}\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--cluster=trial.yaml",
                                           timeout=120)
    said = result.stdout.str() + result.stderr.str()
    assert "to_json" not in said and "INTERNALERROR" not in said, said[-3000:]
    assert ("NOT CHECKED localhost: this machine could not check it: the launcher of "
            f"extension ext = launching_ext:EXTENSION (entry point group {GROUP}, from "
            "hostile-ext 0.1) returned a str for this node, not a ProbeResult") in said, \
        said[-3000:]
    assert result.ret not in (pytest.ExitCode.OK, pytest.ExitCode.INTERNAL_ERROR)


def test_a_nan_in_an_extensions_sim_answer_is_bad_output_naming_it(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    install(pytester, monkeypatch, "launching_ext",
            LAUNCHING.replace("CLASS", "Garbage").replace("ANSWER", "float('nan')"))
    pytester.makefile(".yaml", trial="cluster: {name: t, nodes: 'n[1-2]', launcher: sim}\n"
                                     "sim: {gpus_per_node: 8}\nbmc: {fans: '>= 2'}\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--cluster=trial.yaml",
                                           timeout=120)
    said = result.stdout.str() + result.stderr.str()
    assert "to_json" not in said and "INTERNALERROR" not in said, said[-3000:]
    assert ("bmc probe bad_output: extension ext = launching_ext:EXTENSION (entry point group "
            f"{GROUP}, from hostile-ext 0.1): its sim answer to probe bmc is not strict JSON "
            "(Out of range float values are not JSON compliant") in said, said[-3000:]
    assert result.ret == pytest.ExitCode.TESTS_FAILED


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


#: A run of pytest with the installed extensions loaded first, as a run with --cluster
#: loads them (a plain pytest run would load none)
LOADED_PYTEST = ("import sys, pytest; from pytest_cluster.contract import extensions; "
                 "assert extensions.load() == (); sys.exit(pytest.main(sys.argv[1:]))")


@pytest.mark.slow
def test_the_registry_driven_tests_pass_with_the_extension_installed(extended: Path) -> None:
    """The suite's tests that read the registries, run where the extension is installed
    and loaded: its clause, section, probe and launcher are in every registry, and they
    pass; imported without --cluster, the registries are ours alone."""
    shown = "from pytest_cluster.contract.launchers import KINDS; " \
            "from pytest_cluster.contract.sections import LISTED; " \
            "from pytest_cluster.probes import PROBES; " \
            "print(list(KINDS), LISTED[-1], 'bmc' in PROBES)"
    plain, loaded = (subprocess.run([str(extended), "-c", load + shown], capture_output=True,
                                    text=True, cwd=ROOT, check=True).stdout.strip()
                     for load in ("", "from pytest_cluster.contract import extensions; "
                                      "extensions.load(); "))
    assert plain == "['local', 'sim', 'ssh', 'slurm'] fabric False"
    assert loaded == "['local', 'sim', 'ssh', 'slurm', 'here'] bmc True"
    result = subprocess.run([str(extended), "-c", LOADED_PYTEST, "-p", "no:cacheprovider",
                             "-q", "-x", *REGISTRY_DRIVEN], capture_output=True, text=True,
                            cwd=ROOT, timeout=600, check=False)
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-3000:]


def test_the_extra_clause_reaches_a_run_through_its_entry_point(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """tests/extra_clause.py installed as tests/conftest.py installs it: a run started with
    its folder on the PYTHONPATH loads it by its entry point and checks its clause on every
    GPU of every node of a `gpus:` section that does not write it (its default)."""
    from tests import extra_clause

    site = pytester.path / "site"
    extra_clause.install(site)
    monkeypatch.setenv("PYTHONPATH", str(site))  # this one alone, whatever the session has
    text = ("cluster: {name: t, nodes: 'n[1-2]', launcher: sim}\n"
            "gpus: {count: 2}\nsim: {gpus_per_node: 2}\n")
    pytester.makefile(".yaml", trial=text)
    result = pytester.runpytest_subprocess("--cluster=trial.yaml", "-p", "no:cacheprovider",
                                           "-k", "extra_copy", "--cluster-reports=",
                                           "-v", timeout=120)
    spec = parse_spec(text, "trial.yaml")  # a case on every GPU of every node of the spec
    assert spec.sim is not None
    result.assert_outcomes(passed=len(spec.cluster.nodes) * spec.sim.gpus_per_node)
    result.stdout.fnmatch_lines(["*test_gpu_extra_copy[[]n2-gpu1[]] PASSED*"])
    assert "left out" not in result.stdout.str() + result.stderr.str()


@pytest.mark.slow
def test_a_clause_added_through_the_extension_point_breaks_no_fast_test() -> None:
    """Issue 49: a new clause (`gpus.ecc_mode`, by the recipe) broke 15 fast tests that
    counted cases by hand, 12 of them about a run's mechanics. The fast suite, run with one
    more GPU clause installed through the entry point group (tests/extra_clause.py: a case
    for every GPU of every spec with a `gpus:` section; tests/conftest.py installs it for
    every run of the session), passes: `make test-extra-clause`."""
    from tests import extra_clause

    env = {**os.environ, extra_clause.SWITCH: "1",
           "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])}
    env.pop(extra_clause.SITE, None)  # the run installs its own
    result = subprocess.run([sys.executable, "-m", "pytest", "-m", "not slow", "-n", "2",
                             "-p", "no:cacheprovider", "tests"], capture_output=True,
                            text=True, cwd=ROOT, env=env, timeout=3600, check=False)
    said = result.stdout[-6000:] + result.stderr[-3000:]
    assert f"{extra_clause.HEADER}: gpus.extra_copy" in result.stdout, said
    assert result.returncode == 0, said
    assert " passed" in result.stdout.splitlines()[-1] and "failed" not in \
        result.stdout.splitlines()[-1], said


# -- what an import changes of the process, and an extension's launcher that never returns --


#: An extension module that leaves a thread running, no daemon: the interpreter's exit
#: waited for it forever
LEAVES_A_THREAD = ("import threading, time\n\n\ndef _forever():\n    while True:\n"
                   "        time.sleep(0.01)\n\n\nthreading.Thread(target=_forever, "
                   "name='forever').start()\n")


@pytest.mark.parametrize(("spec", "status"), [
    (SIM_SPEC, pytest.ExitCode.OK),
    (SIM_SPEC.replace("host:", "hots:"), pytest.ExitCode.USAGE_ERROR)])
def test_a_thread_an_import_leaves_is_said_and_not_waited_for(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, spec: str,
        status: pytest.ExitCode) -> None:
    install(pytester, monkeypatch, "threads_ext", LEAVES_A_THREAD)
    pytester.makefile(".yaml", trial=spec)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--cluster=trial.yaml",
                                           "--cluster-reports=", timeout=60)
    said = result.stdout.str() + result.stderr.str()
    assert result.ret == status, said[-3000:]  # the run's own status, not a hang
    if status == pytest.ExitCode.OK:  # (a usage error says the spec's problem alone)
        assert ("ext = threads_ext:EXTENSION (entry point group pytest_cluster.extensions, "
                "from hostile-ext 0.1) left 1 thread(s) running once it was loaded (forever): "
                "what they print is not taken; the run ends without waiting for them"
                ) in said, said[-3000:]


@pytest.mark.parametrize(("body", "why"), [
    ("import time\n        time.sleep(3600)",
     "did not return within 6 s (the time limit it was given and 5 s more): left running"),
    ("raise KeyboardInterrupt", "raised KeyboardInterrupt")])
def test_an_extensions_launcher_that_never_returns_is_bounded(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, body: str,
        why: str) -> None:
    """Before, a launcher whose run slept was waited for forever; one that raised
    KeyboardInterrupt ended the run as interrupted by Ctrl-C."""
    install(pytester, monkeypatch, "launching_ext",
            LAUNCHING.replace("CLASS", "Garbage").replace("ANSWER", "8").replace(
                "return {node: \"nonsense\" for node in nodes}", body))
    pytester.makefile(".yaml", trial="cluster: {name: t, nodes: [localhost], "
                                     "launcher: garbage, probe_timeout: 1 s}\n"
                                     "host: {cpu_cores: '>= 1'}\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--cluster=trial.yaml",
                                           "--cluster-reports=", timeout=60)
    said = result.stdout.str() + result.stderr.str()
    assert ("NOT CHECKED localhost: this machine could not check it: the launcher of "
            f"extension ext = launching_ext:EXTENSION (entry point group {GROUP}, from "
            f"hostile-ext 0.1) {why}") in said, said[-3000:]
    assert result.ret == pytest.ExitCode.TESTS_FAILED


@pytest.mark.parametrize("stops_the_timer", [
    "import signal\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\n",
    "import signal\nsignal.setitimer(signal.ITIMER_REAL, 0)\n",
    "while True:\n    try:\n        while True:\n            pass\n    except BaseException:\n"
    "        pass\n"])
def test_an_import_the_timer_cannot_stop_ends_the_run_saying_so(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
        stops_the_timer: str) -> None:
    """Before, each hung the run forever (and plain `timeout` in a prolog said no more than
    that the limit was reached)."""
    install(pytester, monkeypatch, "stubborn_ext", stops_the_timer + "while True:\n    pass\n")
    pytester.makefile(".yaml", trial=SIM_SPEC)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--cluster=trial.yaml",
                                           "--cluster-reports=", timeout=60)
    said = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.INTERNAL_ERROR, said[-2000:]
    assert (f"ERROR: pytest-cluster: extension ext = stubborn_ext:EXTENSION (entry point group "
            f"{GROUP}, from hostile-ext 0.1), loading, did not finish within 1 s and could not "
            "be stopped (it ignores SIGALRM, turns the timer off or catches every exception): "
            "the run ends here, exit 3") in said, said[-2000:]

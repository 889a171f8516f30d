"""Hostile extensions: what an installed extension that misbehaves costs a run.

The aim (issue 48): an extension is imported by a run with --cluster only; whatever its
import does (loops, exits, raises KeyboardInterrupt, prints 1 GiB) or whatever it ships or
answers (a 2 GB probe file, a launcher returning garbage, a NaN from the sim, a launcher
class that is not there) costs a bounded time and memory and is said in one line naming the
extension; never a hang, a silent exit, a traceback or an INTERNALERROR. Each case is a
whole run as a user's, `python -m pytest --cluster=SPEC -q` in a fresh process from a scratch
directory, with the case's extension installed as a distribution (a dist-info folder with
its entry point, on PYTHONPATH): the time includes the interpreter's and pytest's start-up;
the peak RSS is that process's own (bench/child.py).

Cases: an ordinary run with no extension; a plain pytest run (no --cluster) beside an
extension that loops at import; an import that loops, calls sys.exit(3), raises
KeyboardInterrupt, prints 1 GiB (print) or writes 1 GiB to file descriptor 1; a 2 GB probe
file (sparse); a launcher that returns a string for each node; a sim answer of NaN; a
launcher kind naming a class that is not there; an import that forks (one run, said once,
not two), one that leaves a thread running that is no daemon (the run ends without waiting
for it); a launcher whose run raises KeyboardInterrupt (the tool's error, not a Ctrl-C),
and a sim answer that does (the simulated node's crash, not a Ctrl-C); an import that
ignores SIGALRM and loops (the timer cannot stop it: the run ends 1 s past the limit, exit
3, saying so, where it hung).

Prints per case: exit code (and the one expected), seconds (and beyond the ordinary run's;
its CPU seconds, which a loaded machine does not stretch), peak RSS in MiB, bytes of
output, whether the output says what it must. Ends with
`hostile_extensions_worst_excess_s=<the most a case took beyond the ordinary run>` (aim:
under 2 s, each case under 512 MiB; the ordinary run is pytest's start-up and one check);
`nan` when a case exceeded 512 MiB, did not end as expected or did not say what it must.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from child import ended

ROOT = Path(__file__).resolve().parent.parent
GROUP = "pytest_cluster.extensions"
LIMIT_MIB = 512
HANG_S = 60  # a case still running then is killed and reported as hung

#: A one-node simulated cluster's host check, and the same with the extension's section
SIM = "cluster: {name: x, nodes: n1, launcher: sim}\nsim: {gpus_per_node: 8}\n"
HOST = SIM + "host: {cpu_cores: '>= 1'}\n"
BMC = SIM + "bmc: {fans: '>= 2'}\n"
GARBAGE = "cluster: {name: x, nodes: localhost, launcher: garbage}\nhost: {cpu_cores: '>= 1'}\n"

#: An extension with a `bmc` section and probe (its file: PROBE), the sim's answer to it
#: (ANSWER) and a launcher kind `garbage` whose class is CLASS
EXTENSION = """\
from pathlib import Path
from pytest_cluster import (Actor, Declaration, Dim, Extension, ExtensionSection, Fault,
                            LauncherKind, Reads, Value)
from pytest_cluster.launchers.local import LocalLauncher


class Garbage(LocalLauncher):
    name = "garbage"

    def run(self, call, nodes, timeout_s):
        return {{node: "garbage" for node in nodes}}


class Interrupting(LocalLauncher):
    name = "garbage"

    def run(self, call, nodes, timeout_s):
        raise KeyboardInterrupt


EXTENSION = Extension(
    name="bmc",
    clauses=(Declaration("bmc", "fans", Value.QUANTITY, Dim.COUNT,
                         reads=Reads("bmc", "sensors", "fans"),
                         fault=Fault("PC-BMC-FANS", "replace the fan", Actor.PROVIDER_HARDWARE)),),
    sections=(ExtensionSection("bmc", probes=("bmc",)),),
    launchers=(LauncherKind("garbage", "hostile_ext:{cls}", python=None, one_host=True),),
    probes={{"bmc": {probe}}},
    sim={{"bmc": lambda sim, links, node, args: {{"sensors": {{"fans": {answer}}}}}}},
)
"""


@dataclass(frozen=True)
class Case:
    spec: str
    code: int  # the exit code expected
    says: str  # what the output must say
    before: str = ""  # the extension module's first lines (what its import does)
    probe: str = "Path(__file__)"
    answer: str = "8"
    cls: str = "Garbage"
    plain: bool = False  # run pytest without --cluster, on a test file
    installed: bool = True
    once: bool = False  # `says` must be said exactly once (a forked second run says it twice)


CASES: dict[str, Case] = {
    "ordinary run, no extension": Case(HOST, 0, "1 passed", installed=False),
    "plain pytest, import loops": Case(HOST, 0, "1 passed", "while True:\n    pass\n",
                                       plain=True),
    "import loops": Case(HOST, 0, "did not finish loading within", "while True:\n    pass\n"),
    "import sys.exit(3)": Case(HOST, 0, "stopped loading with SystemExit: 3",
                               "import sys\nsys.exit(3)\n"),
    "import KeyboardInterrupt": Case(HOST, 0, "stopped loading with KeyboardInterrupt",
                                     "raise KeyboardInterrupt\n"),
    "1 GiB printed at import": Case(HOST, 0, "printed 1073741824 character(s)",
                                    "import sys\nfor _ in range(1024):\n"
                                    "    sys.stdout.write('x' * 2**20)\n"),
    "1 GiB to fd 1 at import": Case(HOST, 0, "character(s) while it was loaded",
                                    "import os\nchunk = b'y' * 2**20\nfor _ in range(1024):\n"
                                    "    os.write(1, chunk)\n"),
    "2 GB probe file (sparse)": Case(BMC, 4, "more than the 1048576 a probe may be",
                                     probe="Path(__file__).with_name('huge.py')"),
    "launcher returns garbage": Case(GARBAGE, 1, "returned a str for this node"),
    "sim answer NaN": Case(BMC, 1, "its sim answer to probe bmc is not strict JSON",
                           answer="float('nan')"),
    "launcher class missing": Case(GARBAGE, 4, "cannot be imported: AttributeError",
                                   cls="NotThere"),
    "import forks": Case(HOST, 0, "1 passed", "import os\nos.fork()\n", once=True),
    "import leaves a thread": Case(HOST, 0, "the run ends without waiting for them",
                                   "import threading, time\nthreading.Thread(target=lambda: "
                                   "time.sleep(3600)).start()\n"),
    "launcher KeyboardInterrupt": Case(GARBAGE, 1, "raised KeyboardInterrupt",
                                       cls="Interrupting"),
    "import ignores SIGALRM, loops": Case(HOST, 3, "could not be stopped",
                                          "import signal\nsignal.signal(signal.SIGALRM, "
                                          "signal.SIG_IGN)\nwhile True:\n    pass\n"),
    "sim answer KeyboardInterrupt": Case(BMC, 1, "its sim answer to probe bmc raised "
                                         "KeyboardInterrupt",
                                         answer="(_ for _ in ()).throw(KeyboardInterrupt())"),
}


def install(site_dir: Path, case: Case) -> None:
    info = site_dir / "hostile_ext-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: hostile-ext\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{GROUP}]\nhostile = hostile_ext:EXTENSION\n")
    (site_dir / "hostile_ext.py").write_text(case.before + EXTENSION.format(
        cls=case.cls, probe=case.probe, answer=case.answer))
    with (site_dir / "huge.py").open("wb") as huge:
        huge.truncate(2 * 10**9)  # sparse: no disk


def run(case: Case, root: Path) -> tuple[int, float, float, float, int, bool]:
    site_dir = root / "site"
    site_dir.mkdir()
    if case.installed:
        install(site_dir, case)
    (root / "spec.yaml").write_text(case.spec)
    (root / "test_plain.py").write_text("def test_plain():\n    assert True\n")
    args = ["test_plain.py"] if case.plain else ["--cluster=spec.yaml", "--cluster-reports="]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site_dir), str(ROOT)])}
    with (root / "out.txt").open("wb") as out:
        done = ended([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
                     hang_s=HANG_S, cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT)
    size = (root / "out.txt").stat().st_size
    with (root / "out.txt").open("rb") as out:
        head = out.read(1 << 20)
        said = head.count(case.says.encode()) == 1 if case.once else case.says.encode() in head
    return (done.code if done.code is not None else -1, done.seconds, done.cpu_s, done.rss_mib,
            size, said)


def main() -> int:
    worst, ordinary = 0.0, None
    for name, case in CASES.items():
        with tempfile.TemporaryDirectory(prefix="hostile-ext-") as scratch:
            code, seconds, cpu_s, mib, size, said = run(case, Path(scratch))
        ordinary = seconds if ordinary is None else ordinary
        right = code == case.code and said and mib <= LIMIT_MIB
        print(f"{name:28s} exit {code} (expected {case.code})  {seconds:5.2f} s "
              f"(+{seconds - ordinary:5.2f}, CPU {cpu_s:4.2f} s)  {mib:6.1f} MiB  "
              f"output {size} B  "
              f"{'says it' if said else 'DOES NOT SAY: ' + case.says}")
        worst = max(worst, seconds - ordinary) if right and not math.isnan(worst) else math.nan
    print(f"hostile_extensions_worst_excess_s={worst:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

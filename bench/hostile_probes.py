"""Hostile files under the probes and the baseline check: how long each takes, at what peak
memory, how much it prints.

The aim (issue 38, "files opened without trust"): a node's sysfs, procfs or DMI files, and
a baseline's files, are the other side's. A fifo where a counter or `operstate` should be,
a link out of the tree, 100,000 ports, numbers no kernel writes, a port directory named `²`:
each probe still ends within seconds, in bounded memory, printing one JSON document that
names what it could not read; the baseline check refuses a link or a fifo by its own name.
Every case under 2 s and 512 MiB.

Each probe runs as it is shipped (`python3 - ARGS`, its source on stdin) in a fresh
process, so the time includes the interpreter's start-up; the peak RSS is that process's
own (os.wait4). A case still running after HANG_S is killed and reported as hung. The
trees are built by this process, before the clock starts (100,000 port directories take
a few seconds).

`--repo DIR` benches another checkout's probes and baseline check (e.g. the one before
this change) with the same cases.

Prints per case: exit code, seconds, peak RSS in MiB, bytes of output, whether the output
is what the case expects. Ends with `hostile_probes_worst_s=<the longest case>`, or `nan`
when a case hung, printed what it should not, or went past MAX_RSS_MIB.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from child import ended

HANG_S = 30
#: The most of a case's output this process reads (to check it): all of a bounded one. The
#: rest is only counted: what this process holds, a child it forks starts with (peak RSS).
MAX_READ = 8 * 2**20
MAX_RSS_MIB = 512
MARKER = "PLANTED-OUTSIDE-31337"  # a file out of the tree: never in any output
PROBE = ("-",)  # the probe's source on stdin, as a launcher ships it


@dataclass(frozen=True)
class Case:
    name: str
    program: str  # "nic", "inventory": a probe; "baseline": a check of baseline_files
    make: Callable[[Path], list[str]]  # builds the case under a scratch directory: argv
    expect: Callable[[bytes], bool]  # whether the output is the one wanted


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n")


def sysfs(root: Path) -> Path:
    """A small tree: an HCA port with its counters, an interface."""
    tree = root / "sys"
    port = "class/infiniband/mlx5_0/ports/1"
    write(tree, {f"{port}/state": "4: ACTIVE", f"{port}/phys_state": "5: LinkUp",
                 f"{port}/rate": "400 Gb/sec (4X NDR)", f"{port}/counters/symbol_error": "0",
                 f"{port}/counters/link_downed": "0", "class/net/eth0/type": "1",
                 "class/net/eth0/operstate": "up", "class/net/eth0/speed": "100000",
                 "class/net/eth0/mtu": "9000", "class/net/eth0/statistics/rx_errors": "0"})
    write(root, {"outside/secret": MARKER})
    return tree


def fifo(name: str) -> Callable[[Path], list[str]]:
    def make(root: Path) -> list[str]:
        tree = sysfs(root)
        (tree / name).unlink()
        os.mkfifo(tree / name)
        return ["--sysfs", str(tree)]
    return make


def replaced(name: str, text: str) -> Callable[[Path], list[str]]:
    def make(root: Path) -> list[str]:
        tree = sysfs(root)
        (tree / name).write_text(text)
        return ["--sysfs", str(tree)]
    return make


def link_out(root: Path) -> list[str]:
    tree = sysfs(root)
    for name in ("class/net/eth0/operstate", "class/infiniband/mlx5_0/ports/1/rate"):
        (tree / name).unlink()
        (tree / name).symlink_to(root / "outside/secret")
    (tree / "class/net/eth1").symlink_to(root / "outside")
    return ["--sysfs", str(tree)]


def many_ports(root: Path) -> list[str]:
    """100,000 ports: 400 HCAs of 250 ports each."""
    tree = sysfs(root)
    for device in range(400):
        for port in range(1, 251):
            (tree / f"class/infiniband/d{device:03d}/ports/{port}").mkdir(parents=True)
    return ["--sysfs", str(tree)]


def odd_port(root: Path) -> list[str]:
    tree = sysfs(root)
    (tree / "class/infiniband/mlx5_0/ports/²").mkdir()
    return ["--sysfs", str(tree)]


def dmi(change: Callable[[Path, Path], None]) -> Callable[[Path], list[str]]:
    """An inventory probe's sysfs with DMI tables, `change`d (the file, the scratch dir)."""
    def make(root: Path) -> list[str]:
        tree = root / "sys"
        write(tree, {"class/dmi/id/product_serial": "S1", "class/dmi/id/product_uuid": "U1"})
        write(root, {"outside/secret": MARKER})
        serial = tree / "class/dmi/id/product_serial"
        serial.unlink()
        change(serial, root)
        return ["--sysfs", str(tree)]
    return make


def baseline(name: str, change: Callable[[Path, Path], None]) -> Callable[[Path], list[str]]:
    """A run directory whose `name` is `change`d: checked and read as a baseline's."""
    def make(root: Path) -> list[str]:
        run = root / "run"
        run.mkdir()
        write(root, {"outside/secret": MARKER})
        change(run / name, root)
        return [str(run / name)]
    return make


def sparse(path: Path, size: int) -> None:
    """A file of `size` bytes that takes no room on disk."""
    with path.open("wb") as out:
        out.truncate(size)


def big_outside(path: Path, root: Path) -> None:
    outside = root / "outside" / "big.json"
    sparse(outside, 300 * 2**20)  # more than any limit
    path.symlink_to(outside)


#: What a baseline case runs: the size check, then the reader of the file.
BASELINE = """\
import sys
from pathlib import Path
from pytest_cluster.errors import InputError
from pytest_cluster.evidence.baseline import files as baseline_files
path = Path(sys.argv[1])
try:
    baseline_files.check_sizes(path.parent)
    read = {"inventory.json": baseline_files.read_inventory,
            "results.jsonl": baseline_files.read_results}[path.name]
    read(path)
except InputError as exc:
    print(f"refused: {exc}")
"""


def parsed(out: bytes) -> dict[str, object] | None:
    try:
        document = json.loads(out)
    except ValueError:
        return None
    return document.get("data") if isinstance(document, dict) else None


def names(*words: str) -> Callable[[bytes], bool]:
    """One JSON document (the probe's) saying each of `words`, never the secret."""
    return lambda out: parsed(out) is not None and MARKER.encode() not in out and all(
        word.encode() in out for word in words)


def ports_counted(out: bytes) -> bool:
    data = parsed(out)
    return data is not None and len(out) <= 2 * 2**20 and \
        data.get("ports_left_out") == 100_000 + 2 - 1024


def refused(*words: str) -> Callable[[bytes], bool]:
    return lambda out: out.startswith(b"refused: ") and b"outside" not in out and all(
        word.encode() in out for word in words)


FIFO = "a fifo, not a regular file"
LINK_OUT = "a link out of"
CASES = [
    Case("nic: a counter a fifo", "nic",
         fifo("class/infiniband/mlx5_0/ports/1/counters/symbol_error"), names(FIFO)),
    Case("nic: operstate a fifo", "nic", fifo("class/net/eth0/operstate"), names(FIFO)),
    Case("nic: links out of the tree", "nic", link_out, names(LINK_OUT)),
    Case("nic: 100,000 ports", "nic", many_ports, ports_counted),
    Case("nic: a speed of 400 nines", "nic", replaced("class/net/eth0/speed", "9" * 400),
         names("400 characters")),
    Case("nic: a counter 0x + 4,094 hex digits", "nic",
         replaced("class/net/eth0/statistics/rx_errors", "0x" + "f" * 4094),
         names("4096 characters")),
    Case("nic: a port directory named ²", "nic", odd_port, names("not a port number")),
    Case("inventory: a DMI file a fifo", "inventory",
         dmi(lambda path, _: os.mkfifo(path)), names(FIFO)),
    Case("inventory: a DMI file a link out", "inventory",
         dmi(lambda path, root: path.symlink_to(root / "outside/secret")), names(LINK_OUT)),
    Case("inventory: a 1 GiB DMI file", "inventory",
         dmi(lambda path, _: sparse(path, 2**30)),
         names("more than 4096 bytes")),
    Case("baseline: inventory.json a link out", "baseline",
         baseline("inventory.json", big_outside), refused("a symbolic link")),
    Case("baseline: results.jsonl a fifo", "baseline",
         baseline("results.jsonl", lambda path, _: os.mkfifo(path)), refused("a fifo")),
]


def command(case: Case, argv: list[str], repo: Path) -> tuple[list[str], Path | None]:
    """The child's argv, and the file its stdin reads (a probe's source)."""
    if case.program == "baseline":
        return [sys.executable, "-c", BASELINE, *argv], None
    return [sys.executable, *PROBE, *argv], repo / "pytest_cluster/probes" / \
        f"{case.program}.py"


def run(argv: list[str], source: Path | None, repo: Path,
        out: Path) -> tuple[int | None, float, float]:
    """(exit code or None when hung, seconds, peak RSS in MiB) of one child."""
    env = {**os.environ, "PYTHONPATH": str(repo)}
    with out.open("wb") as sink, (source or Path(os.devnull)).open("rb") as stdin:
        done = ended(argv, HANG_S, stdin=stdin, stdout=sink, stderr=subprocess.DEVNULL,
                     env=env, cwd=out.parent)
    return done.code, done.seconds, done.rss_mib


def main() -> int:
    repo = Path(__file__).resolve().parent.parent
    if sys.argv[1:2] == ["--repo"]:
        repo = Path(sys.argv[2]).resolve()
    worst = 0.0
    with tempfile.TemporaryDirectory(prefix="hostile-probes-") as tmp:
        for index, case in enumerate(CASES):
            root = Path(tmp) / str(index)
            root.mkdir()
            argv, source = command(case, case.make(root), repo)
            code, seconds, rss = run(argv, source, repo, root / "out")
            size = (root / "out").stat().st_size
            with (root / "out").open("rb") as printed:
                out = printed.read(MAX_READ)
            good = code == 0 and size <= MAX_READ and case.expect(out) and rss <= MAX_RSS_MIB
            shown = "hung" if code is None else f"exit {code}"
            print(f"{case.name:40s} {shown:7s} {seconds:6.2f} s  {rss:7.1f} MiB  "
                  f"{size:10d} bytes  {'as expected' if good else 'NOT AS EXPECTED'}",
                  flush=True)
            worst = math.nan if not good or math.isnan(worst) else max(worst, seconds)
    print(f"hostile_probes_worst_s={worst:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Hostile baselines: how long a whole run takes to refuse each, at what peak memory.

The aim (issue 25): a baseline changed by whoever handed it over, its manifest made again
(unsigned, so `pytest-cluster verify` passes), is a usage error (exit 4) in under 2 s, in a
few hundred bytes of output, with no run directory left. The tester's own was a 30 MB
machine id: 192 MB printed, 1.1 GB written, 2.1 GB resident.

One real run of the sim is sealed first; each case is a copy of it edited and sealed again,
then `python -m pytest --cluster=SPEC --cluster-baseline=COPY` in a fresh process from a
scratch directory: the time is start to exit (interpreter and pytest's start-up included;
`--cluster-baseline=` with no value shows that start-up alone), the peak RSS is the
process's own (wait4).

Cases: a 200 MB inventory.json (refused by its size before verify hashes it), a 30 MB
machine id, 200,000 nested `[` in inventory.json; and what the spec does not allow (issue
38): 1,000,000 tiny GPUs on a node (14 MB: over the size 4 nodes may write), 50,000 (under
it: refused by their count before jsonschema), a fifth node, 4,000,000 result lines
(72 MB); and a figure no run measures (issue 48): every result line's figure 5e-324, a
subnormal number against which each comparison was left out in silence ("7 case(s), 0
failed"), now refused naming its line and field (its message must say so: SAYS).

Prints per case: exit code, seconds, peak RSS in MiB, bytes of output, whether a run
directory was made; then the largest peak RSS (`hostile_baseline_worst_rss_mib=`). Ends
with `hostile_baseline_worst_s=<the slowest case>`, or `nan` when a case did not end as a
usage error without a run directory.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from child import ended  # bench/child.py, beside this script

from pytest_cluster.evidence.bundle.manifest import MANIFEST, seal

SPEC = """\
cluster: {name: base, nodes: "n[1-4]", launcher: sim}
gpus:
  count: 8
  matmul: {bf16: ">= 700 TFLOPS"}
sim:
  gpus_per_node: 8
"""
USAGE_ERROR = 4
MIB = 2**20


def repeated(text: str, times: int) -> Iterator[str]:
    """`text` `times` times over, a MiB at a time: the bench itself stays small (a child's
    peak RSS counts its parent's at the fork)."""
    chunk = max(1, MIB // len(text))
    for start in range(0, times, chunk):
        yield text * min(chunk, times - start)


#: Per case: the file, where in it to insert (after the first `at` following `node`, or
#: following the file's start), and what.
INVENTORY, RESULTS = "inventory.json", "results.jsonl"
CASES: dict[str, tuple[str, str, str, Callable[[], Iterator[str]]]] = {
    "200 MB inventory.json": (INVENTORY, '"n2"', '"machine_id": "',
                              lambda: repeated("a", 200 * MIB)),
    "30 MB machine id": (INVENTORY, '"n2"', '"machine_id": "', lambda: repeated("a", 30 * MIB)),
    "200000 nested [": (INVENTORY, "", "{", lambda: iter(['"x": ', *repeated("[", 200_000),
                                                          *repeated("]", 200_000), ", "])),
    "1000000 tiny GPUs (14 MB)": (INVENTORY, '"n2"', '"gpus": [',
                                  lambda: repeated('{"index": 100}, ', 1_000_000)),
    "50000 tiny GPUs (0.8 MB)": (INVENTORY, '"n2"', '"gpus": [',
                                 lambda: repeated('{"index": 100}, ', 50_000)),
    "a fifth node": (INVENTORY, "", '"nodes": {', lambda: iter(['"n5": {}, '])),
    "4000000 result lines (72 MB)": (RESULTS, "", "\n",
                                     lambda: repeated('{"type": "other", "x": 1}\n',
                                                      4_000_000)),
}


def subnormal(text: str) -> str:
    """results.jsonl with every figure 5e-324 (measured and measured_base: they agree)."""
    lines = []
    for line in text.splitlines():
        record = json.loads(line)
        if isinstance(record, dict) and "measured_base" in record:
            record.update(measured=5e-324, measured_base=5e-324)
        lines.append(json.dumps(record))
    return "\n".join(lines) + "\n"


#: Per case edited as a whole (a file small enough to hold): the file and its edit.
EDITS: dict[str, tuple[str, Callable[[str], str]]] = {
    "every figure 5e-324": (RESULTS, subnormal),
}
#: What a case's message must say.
SAYS = {"every figure 5e-324": b"measured_base: expected 0 or a figure of at least 2.225e-308"}


def edited(accepted: Path, where: Path, name: str, edit: Callable[[str], str]) -> Path:
    """A copy of `accepted` with its file `name` edited, its manifest made again."""
    shutil.copytree(accepted, where)
    (where / name).write_text(edit((where / name).read_text()))
    (where / MANIFEST).unlink()
    seal(where, {}, ())
    return where


def run(directory: Path, reports: str, *args: str) -> tuple[int, float, float, int]:
    """(exit code, seconds, peak RSS in MiB, bytes of output) of one pytest run."""
    out = directory / "out.txt"
    with out.open("wb") as sink:
        done = ended([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                      "--cluster=trial.yaml", f"--cluster-reports={reports}", *args],
                     cwd=directory, stdout=sink, stderr=subprocess.STDOUT)
    return done.code if done.code is not None else -1, done.seconds, done.rss_mib, \
        out.stat().st_size


def hostile(accepted: Path, where: Path, name: str, node: str, at: str,
            inserted: Iterator[str]) -> Path:
    """A copy of `accepted` with `inserted` in its file `name`, its manifest made again."""
    shutil.copytree(accepted, where)
    text = (where / name).read_text()
    cut = text.index(at, text.index(node)) + len(at)
    with (where / name).open("w") as out:
        out.write(text[:cut])
        out.writelines(inserted)
        out.write(text[cut:])
    (where / MANIFEST).unlink()
    seal(where, {}, ())
    return where


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="hostile-baseline-") as tmp:
        directory = Path(tmp)
        (directory / "trial.yaml").write_text(SPEC)
        code, seconds, _, _ = run(directory, "accepted", "-q")
        accepted = (directory / "accepted" / "latest").resolve()
        print(f"{'the accepted run (sim, 4 nodes)':32s} {seconds:6.2f} s  exit {code}")
        code, seconds, rss, out = run(directory, "now", "--cluster-baseline=")
        print(f"{'start-up (--cluster-baseline=)':32s} {seconds:6.2f} s  {rss:7.1f} MiB  "
              f"exit {code}  {out:5d} bytes of output")
        worst, worst_rss = 0.0, 0.0
        for number, name in enumerate([*CASES, *EDITS]):
            where = directory / f"base{number}"
            if name in CASES:
                file, node, at, inserted = CASES[name]
                base = hostile(accepted, where, file, node, at, inserted())
            else:
                base = edited(accepted, where, *EDITS[name])
            code, seconds, rss, out = run(directory, "now", f"--cluster-baseline={base}")
            made = (directory / "now").exists()
            said = SAYS.get(name, b"") in (directory / "out.txt").read_bytes()
            print(f"{name:32s} {seconds:6.2f} s  {rss:7.1f} MiB  exit {code}  {out:5d} bytes "
                  f"of output  {'a run directory made' if made else 'no run directory'}"
                  f"{'' if said else '  NOT SAID'}")
            worst = math.nan if code != USAGE_ERROR or made or not said or math.isnan(worst) \
                else max(worst, seconds)
            worst_rss = max(worst_rss, rss)
            shutil.rmtree(base)
    print(f"hostile_baseline_worst_rss_mib={worst_rss:.1f}")
    print(f"hostile_baseline_worst_s={worst:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

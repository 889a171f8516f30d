"""Hostile specs: how long until each is refused, and how much it prints.

The aim (issue 11): every hostile or absurd spec is a usage error within a second, with a
bounded message. Each case below is the tester's input (or its worst form) and runs the same
way a user's run does: `python -m pytest --cluster=FILE` in a fresh process, from a scratch
directory, so the time includes the interpreter and pytest's start-up. That start-up is
measured side by side on a one-line spec with one ordinary mistake (`cluster: {name: x}`, no
nodes: the same process, plugin load and usage error, on a spec of a few bytes), and each
case's cost is its time minus that (median of 3).

Cases: ssh.options KnownHostsCommand; probe_timeout -5 s and 0 s; 5000 nested `[`; a
600-byte "billion laughs" of aliases and one of merge keys; 133,000 node names listed one by
one; 133,000 nodes as hostlists; 49,000 unknown keys; a 100,000-character value;
`--cluster=/dev/zero`; a FIFO (no writer); a 5 MiB file; fabric.ports and fabric.mtu
1e30 (issue 38); `latency_size: 3.5 B` (a byte count with a fraction), `nics_per_node: 1e3`
(echoed as written, not 1000.0), a 4,000-digit value (echoed cut, saying its length), a
bound of 1 MB (its echo found with a 1 MB pattern took 3.4 s) and nodes n1 and N1 (one
host) (issue 48), each of which must say so in its message (SAYS).

Prints per case: exit code, seconds, seconds beyond start-up, peak RSS (the child's own,
bench/child.py), bytes of output. Then `hostile_specs_worst_rss_mib=<the largest peak>`
(aim: below 512) and, last, `worst_cost_s=<the largest time beyond start-up>` (aim: below 1),
or `nan` when a case did not end as a usage error (exit code 4) saying what SAYS expects.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from child import ended  # bench/child.py, beside this script

BASE = "cluster: {name: x, nodes: a}\nhost: {cpu_cores: 1}\n"
NETWORK = ("cluster: {name: x, nodes: 'n[1-2]'}\ninterconnect:\n  busbw: '>= 10 GB/s'\n"
           "  payloads: [4 GiB]\n")
USAGE_ERROR = 4
HANG_S = 120  # a case still running then is reported as hung


def nested(levels: int) -> str:
    return BASE + "x: " + "[" * levels + "]" * levels + "\n"


def laughs() -> str:
    return "a: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(
        f"{c}: &{c} [" + ",".join([f"*{p}"] * 9) + "]\n"
        for p, c in zip("abcdefgh", "bcdefghi", strict=True)) + BASE


def merge_laughs() -> str:
    first = "a: &a {" + ", ".join(f"a{i}: 1" for i in range(10)) + "}\n"
    return first + "".join(f"{c}: &{c} {{<<: [" + ",".join([f"*{p}"] * 10) + "]}\n"
                           for p, c in zip("abcdefgh", "bcdefghi", strict=True)) \
        + "<<: *i\n" + BASE


def names_one_by_one(count: int) -> str:
    names = "".join(f"    - gpu-{i:06d}\n" for i in range(1, count + 1))
    return f"cluster:\n  name: x\n  nodes:\n{names}host: {{cpu_cores: 1}}\n"


CASES: dict[str, Callable[[Path], str]] = {
    "ssh KnownHostsCommand": lambda _: (
        "cluster: {name: x, nodes: a, launcher: ssh}\nhost: {cpu_cores: 1}\n"
        "ssh:\n  options: {KnownHostsCommand: 'touch /tmp/pwned'}\n"),
    "probe_timeout -5 s": lambda _: BASE.replace("nodes: a", "nodes: a, probe_timeout: -5 s"),
    "probe_timeout 0 s": lambda _: BASE.replace("nodes: a", "nodes: a, probe_timeout: 0 s"),
    "5000 nested [": lambda _: nested(4999),
    "billion laughs (aliases)": lambda _: laughs(),
    "billion laughs (merge keys)": lambda _: merge_laughs(),
    "133000 names one by one": lambda _: names_one_by_one(133_000),
    "133000 nodes as hostlists": lambda _: (
        "cluster: {name: x, nodes: ['gpu-[000001-060000]', 'gpu-[060001-120000]', "
        "'gpu-[120001-133000]']}\nhost: {cpu_cores: 1}\n"),
    "49000 unknown keys": lambda _: BASE + "".join(f"k{i}: 1\n" for i in range(49_000)),
    "100000-character value": lambda _: BASE.replace("cpu_cores: 1",
                                                     "cpu_cores: '" + "x" * 100_000 + "'"),
    "5 MiB file": lambda _: BASE + "# " + "x" * (5 * 2**20) + "\n",
    "fabric.ports 1e30": lambda _: BASE + "fabric: {ports: 1e30}\n",
    "fabric.mtu 1e30": lambda _: BASE + "fabric: {mtu: 1e30}\n",
    "latency_size 3.5 B": lambda _: NETWORK + "  latency: '<= 5 us'\n  latency_size: 3.5 B\n",
    "nics_per_node 1e3": lambda _: NETWORK + "  inter_node: {kind: infiniband, "
                                             "nics_per_node: 1e3, rate_per_nic: 400 Gb/s}\n",
    "4000-digit value": lambda _: BASE.replace("cpu_cores: 1", "cpu_cores: " + "9" * 4000),
    "1 MB bound": lambda _: BASE.replace("cpu_cores: 1", "cpu_cores: '>= " + "1" * 2**20 + "'"),
    "n1 and N1": lambda _: BASE.replace("nodes: a", "nodes: [n1, N1]"),
}
#: What a case's message must say (issue 48): the fraction refused, the number as written,
#: the cut value's length where it is cut.
SAYS = {"latency_size 3.5 B": b"got '3.5 B' (that is 3.5 B: a byte count has no fraction)",
        "nics_per_node 1e3": b"got 1e3\n",
        "4000-digit value": b"9... (4000 characters)\n",
        "1 MB bound": b"1... (1048579 characters)'",
        "n1 and N1": b"is listed twice (a host name's case does not matter)"}


def run(directory: Path, spec: str, *more: str) -> tuple[int | None, float, float, bytes]:
    """(exit code, None when hung; seconds; peak RSS in MiB; its output) of one run."""
    out = directory / "out.txt"
    with out.open("wb") as sink:
        done = ended([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                      f"--cluster={spec}", *more], hang_s=HANG_S, cwd=directory,
                     stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    return done.code, done.seconds, done.rss_mib, out.read_bytes()


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="hostile-") as tmp:
        directory = Path(tmp)
        plain = directory / "plain.yaml"
        plain.write_text("cluster: {name: x}\n")
        run(directory, str(plain))  # warm: imports from disk
        start_s = sorted(run(directory, str(plain))[1] for _ in range(3))[1]
        print(f"{'start-up (cluster: {name: x})':40s} {start_s:6.2f} s")
        inputs: dict[str, str] = {}
        for name, make in CASES.items():
            path = directory / f"{len(inputs)}.yaml"
            path.write_text(make(directory))
            inputs[name] = str(path)
        inputs["--cluster=/dev/zero"] = "/dev/zero"
        fifo = directory / "fifo.yaml"
        os.mkfifo(fifo)
        inputs["a FIFO with no writer"] = str(fifo)
        worst, worst_rss = 0.0, 0.0
        for name, spec in inputs.items():
            code, seconds, rss, out = run(directory, spec)
            cost = seconds - start_s
            said = SAYS.get(name, b"") in out
            print(f"{name:40s} {seconds:6.2f} s  +{cost:5.2f} s  {rss:7.1f} MiB  exit {code}  "
                  f"{len(out):7d} bytes of output{'' if said else '  NOT SAID: ' + name}")
            worst = math.nan if code != USAGE_ERROR or not said or math.isnan(worst) else \
                max(worst, cost)
            worst_rss = max(worst_rss, rss)
    print(f"hostile_specs_worst_rss_mib={worst_rss:.1f}")
    print(f"worst_cost_s={worst:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

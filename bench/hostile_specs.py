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
1e30 (issue 38).

Prints per case: exit code, seconds, seconds beyond start-up, bytes of output. Ends with
`worst_cost_s=<the largest time beyond start-up>` (aim: below 1), or `nan` when a case did not
end as a usage error (exit code 4).
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

BASE = "cluster: {name: x, nodes: a}\nhost: {cpu_cores: 1}\n"
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
}


def run(directory: Path, spec: str, *more: str) -> tuple[int | None, float, int]:
    started = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                               f"--cluster={spec}", *more], cwd=directory,
                              capture_output=True, timeout=HANG_S, check=False)
    except subprocess.TimeoutExpired as exc:
        out = len(exc.stdout or b"") + len(exc.stderr or b"")
        return None, time.perf_counter() - started, out
    return done.returncode, time.perf_counter() - started, len(done.stdout) + len(done.stderr)


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
        worst = 0.0
        for name, spec in inputs.items():
            code, seconds, out = run(directory, spec)
            cost = seconds - start_s
            print(f"{name:40s} {seconds:6.2f} s  +{cost:5.2f} s  exit {code}  "
                  f"{out:7d} bytes of output")
            worst = math.nan if code != USAGE_ERROR or math.isnan(worst) else max(worst, cost)
    print(f"worst_cost_s={worst:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

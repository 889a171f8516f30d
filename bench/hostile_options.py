"""Hostile options: how long until each empty or absurd option value is refused, and how
much it prints (issue 25, item 4).

Each case runs as a user's run does, `python -m pytest --cluster=FILE OPTION` in a fresh
process from a scratch directory, on a valid simulated spec, so the time includes the
interpreter and pytest's start-up. That start-up is measured side by side on the same spec
with one ordinary mistake (`--cluster-soak-rounds=0`: the same process, plugin load, spec
validation and usage error), and each case's cost is its time minus that (median of 3).

Cases: an empty --cluster-sign-key (an unset $KEY in CI), --cluster-ssh-sign-key,
--cluster-soak, --cluster-soak-resume; a soak of 100,000 hours; 1e23 rounds; rounds written
with 5,000 digits; a 100,000-character --cluster-soak value; /dev/zero as the signing, the
ssh signing and the baseline's key (read to exhaustion before: refused from its type now).

Issue 38 adds: a 120,000-character --cluster-node hostlist, a 100 kB SLURMD_NODENAME
(--cluster-node=.), --cluster-soak-round=-1, `pytest-cluster verify ''` (argparse's usage
error, exit 2), --junitxml under a file and --html a directory, a soak's directory as
--cluster-baseline, and a spec of 16,384 nodes in one run (refused before collection).

Prints per case: exit code, seconds, seconds beyond start-up, peak RSS (MiB: the process's
own, wait4), bytes of output; then the largest peak RSS (`hostile_options_worst_rss_mib=`).
Ends with `hostile_options_worst_s=<the largest time beyond start-up>` (aim: below 1), or
`nan` when a case did not end as its usage error, printed more than 2,000 bytes, or took
2 s or 512 MiB.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from child import ended
from hostile_specs import USAGE_ERROR  # bench/hostile_specs.py, beside this script

ARGPARSE_ERROR = 2  # pytest-cluster verify's usage error
ROOT = Path(__file__).resolve().parent.parent

SPEC = "cluster: {name: opts, nodes: [n1, n2], launcher: sim}\ngpus: {count: 8}\nsim: {}\n"
CASES: dict[str, list[str]] = {
    "--cluster-sign-key= (empty)": ["--cluster-sign-key="],
    "--cluster-ssh-sign-key= (empty)": ["--cluster-ssh-sign-key="],
    "--cluster-soak= (empty)": ["--cluster-soak="],
    "--cluster-soak-resume= (empty)": ["--cluster-soak-resume="],
    "--cluster-soak=100000h": ["--cluster-soak=100000h"],
    "--cluster-soak-rounds=1e23": ["--cluster-soak-rounds=1e23"],
    "--cluster-soak-rounds=<5,000 digits>": ["--cluster-soak-rounds=" + "9" * 5000],
    "--cluster-soak=<100,000 characters>": ["--cluster-soak=" + "1" * 100_000 + "h"],
    "--cluster-sign-key=/dev/zero": ["--cluster-sign-key=/dev/zero"],
    "--cluster-ssh-sign-key=/dev/zero": ["--cluster-ssh-sign-key=/dev/zero"],
    "--cluster-baseline-key=/dev/zero": ["--cluster-baseline=.",
                                         "--cluster-baseline-key=/dev/zero"],
}
#: Issue 38's cases: (the command after `python -m`, environment added, exit expected).
MORE: dict[str, tuple[list[str], dict[str, str], int]] = {
    "--cluster-node=<120,000 characters>": (
        ["--cluster-node=n[" + "1," * 60_000 + "x]"], {}, USAGE_ERROR),
    "SLURMD_NODENAME=<100 kB>, --cluster-node=.": (
        ["--cluster-node=."], {"SLURMD_NODENAME": "y" * 100_000}, USAGE_ERROR),
    "--cluster-soak-round=-1": (["--cluster-soak-round=-1"], {}, USAGE_ERROR),
    "--junitxml=<a file>/junit.xml": (["--junitxml=spec.yaml/junit.xml"], {}, USAGE_ERROR),
    "--html=<a directory>": (["--html=."], {}, USAGE_ERROR),
    "--cluster-baseline=<a soak's directory>": (["--cluster-baseline=soak"], {},
                                                USAGE_ERROR),
    "16,384 nodes in one run": (["--cluster=big.yaml", "-m", "sanity"], {}, USAGE_ERROR),
    "pytest-cluster verify ''": (["pytest_cluster.cli", "verify", ""], {}, ARGPARSE_ERROR),
}
MOST_OUTPUT = 2000
MOST_S, MOST_RSS_MIB = 2.0, 512.0


def measured(directory: Path, args: list[str],
             env: dict[str, str]) -> tuple[int, float, float, int]:
    """(exit code, seconds, peak RSS in MiB, bytes of output) of `python -m ARGS`."""
    command = args if args[0] == "pytest_cluster.cli" else [
        "pytest", "-p", "no:cacheprovider",
        *([] if any(a.startswith("--cluster=") for a in args) else ["--cluster=spec.yaml"]),
        *args]
    out = directory / "out.txt"
    with out.open("wb") as sink:
        done = ended([sys.executable, "-m", *command], cwd=directory, stdout=sink,
                     stderr=subprocess.STDOUT,
                     env={**os.environ, "PYTHONPATH": str(ROOT), **env})
    return (done.code if done.code is not None else -1, done.seconds, done.rss_mib,
            out.stat().st_size)


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="hostile-options-") as tmp:
        directory = Path(tmp)
        spec = directory / "spec.yaml"
        spec.write_text(SPEC)
        ordinary = ["--cluster-soak-rounds=0"]
        (directory / "big.yaml").write_text(SPEC.replace("[n1, n2]", "'n[00001-16384]'"))
        (directory / "soak" / "rounds" / "round-0001").mkdir(parents=True)
        (directory / "soak" / "soak.json").write_text("{}")
        measured(directory, ordinary, {})  # warm: imports from disk
        start_s = sorted(measured(directory, ordinary, {})[1] for _ in range(3))[1]
        print(f"{'start-up (--cluster-soak-rounds=0)':44s} {start_s:6.2f} s")
        worst, worst_rss = 0.0, 0.0
        cases = {**{name: (options, {}, USAGE_ERROR) for name, options in CASES.items()},
                 **MORE}
        for name, (options, env, expected) in cases.items():
            code, seconds, rss, out = measured(directory, options, env)
            cost = seconds - start_s
            print(f"{name:44s} {seconds:6.2f} s  +{cost:5.2f} s  {rss:6.1f} MiB  exit {code}"
                  f"  {out:7d} bytes of output")
            failed = (code != expected or out > MOST_OUTPUT or seconds > MOST_S
                      or rss > MOST_RSS_MIB)
            worst = math.nan if failed or math.isnan(worst) else max(worst, cost)
            worst_rss = max(worst_rss, rss)
    print(f"hostile_options_worst_rss_mib={worst_rss:.1f}")
    print(f"hostile_options_worst_s={worst:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

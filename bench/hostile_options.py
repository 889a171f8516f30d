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

Prints per case: exit code, seconds, seconds beyond start-up, bytes of output. Ends with
`hostile_options_worst_s=<the largest time beyond start-up>` (aim: below 1), or `nan` when a
case did not end as a usage error (exit code 4) or printed more than 2,000 bytes.
"""

from __future__ import annotations

import math
import sys
import tempfile
from pathlib import Path

from hostile_specs import USAGE_ERROR, run  # bench/hostile_specs.py, beside this script

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
MOST_OUTPUT = 2000


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="hostile-options-") as tmp:
        directory = Path(tmp)
        spec = directory / "spec.yaml"
        spec.write_text(SPEC)
        ordinary = ["--cluster-soak-rounds=0"]
        run(directory, str(spec), *ordinary)  # warm: imports from disk
        start_s = sorted(run(directory, str(spec), *ordinary)[1] for _ in range(3))[1]
        print(f"{'start-up (--cluster-soak-rounds=0)':40s} {start_s:6.2f} s")
        worst = 0.0
        for name, options in CASES.items():
            code, seconds, out = run(directory, str(spec), *options)
            cost = seconds - start_s
            print(f"{name:40s} {seconds:6.2f} s  +{cost:5.2f} s  exit {code}  "
                  f"{out:7d} bytes of output")
            failed = code != USAGE_ERROR or out > MOST_OUTPUT
            worst = math.nan if failed or math.isnan(worst) else max(worst, cost)
    print(f"hostile_options_worst_s={worst:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

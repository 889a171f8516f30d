"""Hostile nodes: what a node's answer costs the controller, whatever the node prints.

The aim (issue 38): a node that prints without end, answers numbers that are none, or JSON
nested beyond reason costs its own cases (failed, saying why) - never the controller's
memory, a hang, a traceback or a pass. Each case is a whole run as a user's, `pytest
--cluster=SPEC` in a fresh process on this machine as a one-node cluster whose interpreter
(`cluster.python`) is a wrapper: it runs the real probe, then answers the host probe with
the case's text (or prints the case's flood). The time is the run's wall time (pytest's
start-up included); the peak RSS is that process's own (os.wait4).

Cases: an ordinary run first (its time is the baseline of the others' excess); 1.5 GB on
stdout and on stderr; cpu.cores as Infinity, NaN, "many", a 100,000-deep
list; a 50 MB model name. Prints per case: exit code, seconds, peak RSS in MiB, whether
the run's evidence is complete (verdict.json written) and its size. Ends with
`hostile_nodes_worst_excess_s=<the most a case took beyond the ordinary run>` (aim: under
2 s); `nan` when a case exceeded 512 MiB or did not write its verdict.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import tempfile
from pathlib import Path

from child import ended

FLOOD = """\
#!{python}
import sys
out = sys.{stream}.buffer
chunk = b"x" * 2**20
for _ in range(1536):
    out.write(chunk)
"""
ANSWER = """\
#!{python}
import json, subprocess, sys
done = subprocess.run([{python!r}, *sys.argv[1:]], input=sys.stdin.read(),
                      capture_output=True, text=True)
lines = done.stdout.strip().splitlines()
document = json.loads(lines[-1]) if lines else {{}}
if document.get("probe") == "host":
    document["data"]["cpu"]["{field}"] = "__X__"
    print(json.dumps(document).replace('"__X__"', open({path!r}).read()))
else:
    sys.stdout.write(done.stdout)
sys.exit(done.returncode)
"""
CASES: dict[str, tuple[str, dict[str, str]]] = {
    "ordinary (the baseline)": (ANSWER, {"field": "sockets", "text": "1"}),
    "stdout 1.5 GB": (FLOOD, {"stream": "stdout"}),
    "stderr 1.5 GB": (FLOOD, {"stream": "stderr"}),
    "cores Infinity": (ANSWER, {"field": "cores", "text": "Infinity"}),
    "cores NaN": (ANSWER, {"field": "cores", "text": "NaN"}),
    'cores "many"': (ANSWER, {"field": "cores", "text": '"many"'}),
    "cores 100,000-deep list": (ANSWER, {"field": "cores",
                                         "text": "[" * 100_000 + "]" * 100_000}),
    "model 50 MB": (ANSWER, {"field": "model", "text": json.dumps("x" * 50_000_000)}),
}
LIMIT_MIB = 512


def run(case: str, root: Path) -> tuple[int, float, float, bool, int]:
    """One case: exit code, seconds, peak RSS (MiB), verdict written, run dir bytes."""
    template, values = CASES[case]
    text = root / "answer.txt"
    text.write_text(values.get("text", ""))
    fake = root / "python-node"
    fake.write_text(template.format(python=sys.executable, path=str(text), **values))
    fake.chmod(0o755)
    (root / "spec.yaml").write_text(
        f"cluster: {{name: hostile, nodes: localhost, launcher: local, python: {fake}}}\n"
        "host: {cpu_cores: '>= 1', memory: '>= 1 GiB'}\n")
    done = ended([sys.executable, "-m", "pytest", "--cluster=spec.yaml", "-q", "-p",
                  "no:cacheprovider", "--cluster-reports=reports"],
                 cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    runs = sorted((root / "reports").glob("2*"))
    written = bool(runs) and (runs[-1] / "verdict.json").exists()
    size = sum(p.stat().st_size for p in runs[-1].rglob("*") if p.is_file()) if runs else 0
    return done.code if done.code is not None else -1, done.seconds, done.rss_mib, written, \
        size


def main() -> int:
    worst, ordinary = 0.0, None
    for case in CASES:
        with tempfile.TemporaryDirectory(prefix="hostile-nodes-") as scratch:
            code, seconds, mib, written, size = run(case, Path(scratch))
        ordinary = seconds if ordinary is None else ordinary
        print(f"{case:28s} exit {code}  {seconds:6.2f} s (+{seconds - ordinary:5.2f})  "
              f"{mib:7.1f} MiB  verdict {'written' if written else 'MISSING'}  "
              f"run dir {size / 1e6:.2f} MB")
        worst = math.nan if (not written or mib > LIMIT_MIB or math.isnan(worst)) \
            else max(worst, seconds - ordinary)
    print(f"hostile_nodes_worst_excess_s={worst:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A node's answer is the other party's: what it prints is read within a bound, as strict
JSON, and a number that is not a finite number, a value of the wrong type or JSON nested
beyond reason fails the case that reads it, saying so - never a pass, a traceback, NaN
or Infinity in the evidence. Every JSON file the run writes is strict JSON."""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import pytest

from pytest_cluster.contract import parse_spec
from pytest_cluster.errors import SpecError

PACKAGE = Path(__file__).resolve().parents[2] / "pytest_cluster"

FAKE = """\
#!{python}
# a node whose interpreter runs the probe, then answers with its host probe's
# cpu.cores replaced by {shown}
import json, subprocess, sys
done = subprocess.run([{python!r}, *sys.argv[1:]], input=sys.stdin.read(),
                      capture_output=True, text=True)
lines = done.stdout.strip().splitlines()
document = json.loads(lines[-1]) if lines else {{}}
if document.get("probe") == "host":
    document["data"]["cpu"]["cores"] = "__CORES__"
    print(json.dumps(document).replace('"__CORES__"', {text!r}))
else:
    sys.stdout.write(done.stdout)
sys.stderr.write(done.stderr)
sys.exit(done.returncode)
"""


def _strict(name: str) -> None:
    raise ValueError(f"{name} in strict JSON")


def run_with_cores(pytester: pytest.Pytester, text: str) -> tuple[pytest.RunResult,
                                                                  list[dict[str, object]]]:
    fake = pytester.path / "python-node"
    fake.write_text(FAKE.format(python=sys.executable, shown=text[:20], text=text))
    fake.chmod(0o755)
    (pytester.path / "trial.yaml").write_text(
        f"cluster: {{name: t, nodes: localhost, launcher: local, python: {fake}}}\n"
        "host: {cpu_cores: '>= 1', memory: '>= 1 GiB'}\n")
    result = pytester.runpytest_subprocess("--cluster=trial.yaml", "-p", "no:cacheprovider",
                                           "--cluster-reports=reports")
    run = pytester.path / "reports" / "latest"
    for name in ("results.jsonl", "verdict.json", "inventory.json"):
        for line in (run / name).read_text().splitlines() if name.endswith("l") \
                else [(run / name).read_text()]:
            json.loads(line, parse_constant=_strict)  # strict JSON, or it raises
    records = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    return result, [r for r in records if r.get("type") == "result"]


@pytest.mark.slow
@pytest.mark.parametrize(("text", "said"), [
    ("Infinity", "not a finite number"),
    ("NaN", "not a finite number"),
    ("1e999", "not a finite number"),
    ('"many"', "the host probe's cpu.cores is not a finite number: 'many'"),
    ("[1, 2]", "the host probe's cpu.cores is not a finite number: a list of 2"),
    ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ("1e308", "cpu.cores = 1e+308, outside the plausible 1 to 65536 cores"),
])
def test_a_node_answering_no_number_fails_the_case_saying_why(
        pytester: pytest.Pytester, text: str, said: str) -> None:
    result, records = run_with_cores(pytester, text)
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()[-2000:]
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    cores, = [r for r in records if r.get("clause") == "host.cpu_cores"]
    assert cores["outcome"] == "failed" and said in str(cores["message"]), cores["message"]
    assert "measured_base" not in cores  # nothing compared, nothing passed


@pytest.mark.slow
def test_a_long_answer_is_cut_in_the_evidence(pytester: pytest.Pytester) -> None:
    """A node's model name of 4 MB (within what a probe may print) costs the run's
    directory a few KB, not 5 copies of it."""
    _, records = run_with_cores(pytester, json.dumps("x" * 4_000_000))
    cores, = [r for r in records if r.get("clause") == "host.cpu_cores"]
    assert len(json.dumps(cores)) < 8000
    run = pytester.path / "reports" / "latest"
    assert sum(p.stat().st_size for p in run.rglob("*") if p.is_file()) < 12 * 2**20


def test_every_json_the_controller_writes_refuses_nan() -> None:
    """Each json.dump/json.dumps of the package (not the probes: they run on the nodes,
    and the controller reads what they print strictly) passes allow_nan=False."""
    lax = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if "probes" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr in ("dump", "dumps") \
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "json" \
                    and not any(k.arg == "allow_nan" and isinstance(k.value, ast.Constant)
                                and k.value.value is False for k in node.keywords):
                lax.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    assert lax == []


@pytest.mark.parametrize(("given", "expected"), [
    ("64 KiB", 64 * 2**10), ("1 GiB", 2**30), (None, 16 * 2**20)])
def test_the_output_a_probe_may_print_is_set_in_the_spec(given: str | None,
                                                         expected: int) -> None:
    extra = f", probe_output: {given}" if given else ""
    spec = parse_spec(f"cluster: {{name: t, nodes: n1{extra}}}\nhost: {{cpu_cores: 1}}\n",
                      "t.yaml")
    assert spec.cluster.probe_output_bytes == expected


@pytest.mark.parametrize("given", ["1 KiB", "2 GiB", "lots", "-1 MiB"])
def test_a_probe_output_limit_out_of_range_is_refused_naming_the_key(given: str) -> None:
    with pytest.raises(SpecError, match=r"t.yaml:1: cluster.probe_output: expected a size"):
        parse_spec(f"cluster: {{name: t, nodes: n1, probe_output: {given}}}\n", "t.yaml")

"""The records a run writes, declared once (evidence/record/lines.py): a result line told from
the other kinds of line, and every key a simulated run writes in each kind declared."""

from __future__ import annotations

import json
from typing import Any

from pytest_cluster.evidence.record.lines import EndLine, ResultLine, RoundLine, RunLine, is_result

#: Each kind of line of results.jsonl and its declaration.
DECLARED: dict[str, Any] = {"run": RunLine, "result": ResultLine, "round_result": ResultLine,
                            "round": RoundLine, "end": EndLine}


def test_a_result_line_is_told_from_the_other_kinds() -> None:
    lines: list[dict[str, object]] = [{"type": kind} for kind in DECLARED]
    assert [kind for kind, line in zip(DECLARED, lines, strict=True) if is_result(line)] == [
        "result"]
    assert not is_result({}) and not is_result({"type": ["result"]})


def test_every_key_a_simulated_run_writes_is_declared(pytester: Any) -> None:
    """A sim run of the suite (its GPU, host and software checks on two nodes): each key
    of its run line, result lines and end line is one its record declares, so what a
    sink is handed through the hooks is what its type says."""
    (pytester.path / "t.yaml").write_text(
        'cluster: {name: lines, nodes: "n[1-2]", launcher: sim}\ngpus: {count: 8}\n'
        "sim: {gpus_per_node: 8, faults: [{node: n2, gpu: 1, ecc_uncorrected: 2}]}\n",
        encoding="utf-8")
    result = pytester.runpytest("--cluster=t.yaml", "-p", "no:cacheprovider",
                                "--cluster-reports=reports")
    assert result.ret == 1, result.stdout.str()[-2000:]  # n2's GPU fails: every key said
    lines = [json.loads(text) for text in next((pytester.path / "reports").glob(
        "*-lines/results.jsonl")).read_text(encoding="utf-8").splitlines()]
    assert {line["type"] for line in lines} == {"run", "result", "end"}
    for line in lines:
        declared = DECLARED[line["type"]]
        keys = declared.__required_keys__ | declared.__optional_keys__
        assert set(line) <= keys, (line["type"], sorted(set(line) - keys))

"""--cluster-baseline-accept: a part replaced on purpose (an RMA) is accepted against the
baseline by its new serial, said and recorded; every other change still fails, the part's
figures are still compared, an accepted serial no change matched is said, and a value that
names no serial is a usage error."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from pytest_cluster.evidence.baseline.hardware import node_changes, same_hardware
from pytest_cluster.evidence.baseline.replacements import (
    MAX_ACCEPTED,
    MAX_FILE,
    MAX_SERIAL,
    OPTION,
    Accepted,
    AcceptError,
    parse,
    summary,
)
from pytest_cluster.evidence.record.end import verdict_schema
from pytest_cluster.evidence.sinks.results import ResultLine, read_results
from tests.evidence.baseline.test_hardware import NODE, _baseline
from tests.oracle import check


def _copy(node: Any) -> Any:
    return json.loads(json.dumps(node))


def test_values_and_files_name_serials() -> None:
    """SERIAL[,SERIAL...], OLD=NEW, @FILE (one a line, # comments), repeatable; the same
    serial twice is kept once."""
    files = {"rma.txt": b"# RMA 4711, n3\n1654000000001   # gpu6\n\n  OLD9=NEW9\n"
                        b"1654000000001\r\nD7, D8\n"}
    got = parse(["A1,B2", "@rma.txt", " c3 "], lambda path: files[str(path)])
    assert got == (Accepted("A1"), Accepted("B2"), Accepted("1654000000001"),
                   Accepted("NEW9", "OLD9"), Accepted("D7"), Accepted("D8"), Accepted("c3"))
    assert [each.given for each in got[2:4]] == ["1654000000001", "OLD9=NEW9"]
    # a label's upper case is sysfs' lower case
    assert Accepted("AA:BB").covers("x", "aa:bb") and not Accepted("AA:BB").covers("x", "aa")
    assert Accepted("N", "O").covers("o", "n") and not Accepted("N", "O").covers("P", "N")
    assert not Accepted("N").covers("O", {"unreadable": "root only"})


@pytest.mark.parametrize(("values", "said"), [
    ([""], "an empty value"),
    (["A1,,B2"], "item 2: an empty serial"),
    (["A1,b 2"], "item 2: 'b 2' is no serial"),
    (["$(reboot)"], "item 1: '$(reboot)' is no serial"),
    (["=N1"], "item 1: an empty serial"),
    (["X" * (MAX_SERIAL + 1)], f"longer than {MAX_SERIAL} characters"),
    ([",".join(f"S{i}" for i in range(MAX_ACCEPTED + 1))], f"more than {MAX_ACCEPTED}"),
    (["@"], "expected a file's path after @"),
    (["A1", "B2,C 3"], "item 2 of B2,C 3: 'C 3' is no serial"),
])
def test_a_value_that_names_no_serial_is_refused(values: list[str], said: str) -> None:
    with pytest.raises(AcceptError) as caught:
        parse(values)
    assert said in str(caught.value)


def test_a_file_of_serials_is_read_as_untrusted(tmp_path: Path) -> None:
    """A missing file, a FIFO (never waited on), one too large, one not UTF-8, a bad line
    (named by its number): each refused, saying which."""
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "big").write_bytes(b"A1\n" * (MAX_FILE // 3 + 1))
    (tmp_path / "latin").write_bytes(b"S\xe91\n")
    (tmp_path / "bad").write_text("A1\n# fine\nB 2\n")
    for name, said in (("none", f"{tmp_path / 'none'}: No such file"),
                       ("fifo", f"{tmp_path / 'fifo'}: a fifo, not a regular file"),
                       ("big", f"larger than {MAX_FILE} bytes"), ("latin", "not UTF-8"),
                       ("bad", f"{tmp_path / 'bad'}:3: 'B 2' is no serial")):
        with pytest.raises(AcceptError) as caught:
            parse([f"@{tmp_path / name}"])
        assert str(caught.value).startswith(str(tmp_path)), caught.value
        assert said in str(caught.value) and str(caught.value).count(str(tmp_path)) == 1


def test_an_accepted_replacement_is_said_and_other_changes_still_fail() -> None:
    """gpu6, the NIC and the disk replaced: accepted by their new serial (MAC), each is said
    and none fails; the new disk's other model, gpu6's other VBIOS and a replacement
    accepted in place of another part (OLD=NEW) still fail; one not accepted names the
    option that would accept it."""
    now = _copy(NODE)
    now["gpus"][0].update(serial="1650002", uuid="GPU-b")
    now["interfaces"][0]["address"] = "aa:cc"
    now["filesystems"][0]["block_devices"][0].update(serial="D2", model="Y")
    found = node_changes(NODE, now, (Accepted("1650002"), Accepted("AA:CC"), Accepted("d2")))
    assert found.changes == ["disk under /data nvme0n1 model X at baseline, now Y"]
    assert [each.said for each in found.replaced] == [
        f"accepted replacement: gpu6 1650001 -> 1650002 ({OPTION})",
        f"accepted replacement: NIC eno1 aa:bb -> aa:cc ({OPTION})",
        f"accepted replacement: disk under /data nvme0n1 D1 -> D2 ({OPTION})"]
    assert found.not_accepted == []
    # the board accepted is compared as the one it replaced
    now["gpus"][0]["vbios"] = "96.2"
    assert node_changes(NODE, now, (Accepted("1650002"),)).changes[0] == (
        "gpu6 vbios 96.1 at baseline, now 96.2")
    # OLD=NEW: only in place of OLD
    wrong = node_changes(NODE, now, (Accepted("1650002", "1659999"),))
    assert wrong.changes[0].startswith("gpu6 swapped: serial 1650001")
    assert not wrong.replaced and wrong.not_accepted == ["1650002", "aa:cc", "D2"]
    case = same_hardware(_baseline({"n1": NODE}), {"nodes": {"n1": now}})[0]
    assert case.message.endswith(f"; parts replaced on purpose (an RMA) are accepted with "
                                 f"{OPTION}=1650002,aa:cc,D2")


def test_an_accepted_serial_seen_nowhere_is_said() -> None:
    now = _copy(NODE)
    now["gpus"][0].update(serial="1650002", uuid="GPU-b")
    accepted = (Accepted("1650002"), Accepted("S-NOT-HERE"))
    cases = same_hardware(dataclasses.replace(_baseline({"n1": NODE}), accept=accepted),
                          {"nodes": {"n1": now}})
    assert [case.passed for case in cases] == [True]
    assert cases[0].props["accepted_replacements"] == [
        {"part": "gpu6", "old": "1650001", "new": "1650002", "accepted": "1650002"}]
    assert cases[0].props["measured"] == (
        f"as at baseline; accepted replacement: gpu6 1650001 -> 1650002 ({OPTION})")
    seen, unseen = summary(accepted, cases)
    assert seen["seen"] == [{"node": "n1", "part": "gpu6", "old": "1650001",
                             "new": "1650002"}]
    assert unseen["seen"] == [] and unseen["said"].startswith(
        f"accepted but not seen: S-NOT-HERE ({OPTION})")


SPEC = """\
cluster: {{name: rma, nodes: "n[1-2]", launcher: sim}}
gpus:
  count: 8
  matmul: {{bf16: ">= 100 TFLOPS"}}
sim:
  gpus_per_node: 8
  faults: [{faults}]
"""
HARDWARE = "pytest_cluster/baseline.py::test_same_hardware[n2]"


def _run(pytester: pytest.Pytester, reports: str, *args: str,
         faults: str = "") -> tuple[pytest.RunResult, Path]:
    (pytester.path / "rma.yaml").write_text(SPEC.format(faults=faults))
    result = pytester.runpytest("--cluster=rma.yaml", "-p", "no:cacheprovider",
                                f"--cluster-reports={reports}", *args)
    return result, pytester.path / reports / "latest"


def _line(run_dir: Path, nodeid: str) -> ResultLine:
    [line] = [r for r in read_results(run_dir / "results.jsonl").results
              if r["nodeid"] == nodeid]
    return line


def _gpu_serial(run_dir: Path, node: str, index: int) -> str:
    inventory = json.loads((run_dir / "inventory.json").read_text())
    [gpu] = [g for g in inventory["nodes"][node]["gpus"] if g["index"] == index]
    return str(gpu["serial"])


@pytest.mark.slow
def test_a_gpu_replaced_under_rma_is_accepted_by_its_new_serial(
        pytester: pytest.Pytester) -> None:
    """n2's gpu6 replaced since the baseline: its hardware case fails (naming the option
    and the new serial); accepted by that serial it passes, the replacement said in the
    case, the terminal, results.jsonl and verdict.json, a serial accepted that no part
    was replaced by warned; a second part replaced and not accepted still fails the node;
    the new board measured slower than the old still fails the baseline's figure."""
    accepted, base = _run(pytester, "accepted")
    assert accepted.ret == pytest.ExitCode.OK
    base = base.resolve()
    replaced = "{node: n2, gpu: 6, replaced: true}"
    failed, run_dir = _run(pytester, "rma", f"--cluster-baseline={base}", faults=replaced)
    assert failed.ret == pytest.ExitCode.TESTS_FAILED
    old, new = _gpu_serial(base, "n2", 6), _gpu_serial(run_dir, "n2", 6)
    assert old != new
    line = _line(run_dir, HARDWARE)
    assert line["outcome"] == "failed" and f"gpu6 swapped: serial {old}" in line["message"]
    assert line["message"].endswith(f"accepted with {OPTION}={new}")
    assert "accepted_replacements" not in line

    passed, run_dir = _run(pytester, "accept", f"--cluster-baseline={base}",
                           f"{OPTION}={new},1654000000000", faults=replaced)
    assert passed.ret == pytest.ExitCode.OK, passed.stdout.str()[-3000:]
    said = f"accepted replacement: gpu6 {old} -> {new} ({OPTION})"
    line = _line(run_dir, HARDWARE)
    assert line["outcome"] == "passed" and said in line["measured"]
    assert line["accepted_replacements"] == [
        {"part": "gpu6", "old": old, "new": new, "accepted": new}]
    out = passed.stdout.str()
    assert f"  baseline: n2: {said}" in out
    assert f"  baseline warning: accepted but not seen: 1654000000000 ({OPTION})" in out
    verdict = json.loads((run_dir / "verdict.json").read_text())
    Draft202012Validator(verdict_schema()).validate(verdict)
    assert [(e["serial"], e["seen"]) for e in verdict["baseline_accepted"]] == [
        (new, [{"node": "n2", "part": "gpu6", "old": old, "new": new}]),
        ("1654000000000", [])]
    assert verdict["baseline_accepted"][1]["said"].startswith(
        "accepted but not seen: 1654000000000")
    assert {n["node"]: n["verdict"] for n in verdict["nodes"]} == {
        "n1": "ACCEPTED", "n2": "ACCEPTED"}
    assert check(run_dir, out) == []  # every view says the same

    # a second board replaced, not accepted; the accepted one at 70 % of the old one
    slower = "{node: n2, gpu: 6, replaced: true, matmul_factor: 0.7}, " \
             "{node: n2, gpu: 2, replaced: true}"
    still, run_dir = _run(pytester, "second", f"--cluster-baseline={base}",
                          f"{OPTION}={new}", faults=slower)
    assert still.ret == pytest.ExitCode.TESTS_FAILED
    line = _line(run_dir, HARDWARE)
    assert line["outcome"] == "failed"
    assert f"gpu2 swapped: serial {_gpu_serial(base, 'n2', 2)}" in line["message"]
    assert "gpu6 swapped" not in line["message"] and said in line["message"]
    worse = [r for r in read_results(run_dir / "results.jsonl").results
             if r["clause"] == "baseline.performance[gpus.matmul.bf16]"
             and r["outcome"] == "failed"]
    assert {(r["node"], r.get("gpu")) for r in worse} == {("n2", 6)}
    assert "below baseline" in worse[0]["message"]


@pytest.mark.parametrize(("args", "said"), [
    ((f"{OPTION}=1654000000001",), f"{OPTION} needs --cluster-baseline=DIR"),
    (("--cluster-baseline=anywhere", f"{OPTION}="), f"{OPTION}: an empty value"),
    (("--cluster-baseline=anywhere", f"{OPTION}=A1;reboot"),
     f"{OPTION}: item 1: 'A1;reboot' is no serial"),
    (("--cluster-baseline=anywhere", f"{OPTION}=@missing.txt"),
     f"{OPTION}: missing.txt: No such file or directory"),
])
def test_a_bad_accept_is_a_usage_error(pytester: pytest.Pytester, args: tuple[str, ...],
                                       said: str) -> None:
    """Before anything runs: exit 4, naming the option."""
    result, _ = _run(pytester, "reports", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert said in result.stderr.str()

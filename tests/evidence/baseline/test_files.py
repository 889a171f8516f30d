"""A baseline is untrusted input: its results.jsonl and inventory.json, changed by whoever
handed the directory over and the manifest made again (unsigned, so verify passes), are
refused before anything runs (exit 4, one line naming the file, the field and what was
expected, no run directory), or compared without a crash. The strict reader and the
shapes alone, a fuzz of both files, then whole runs against hostile baselines."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_cluster.errors import InputError
from pytest_cluster.evidence.baseline import files as baseline_files
from pytest_cluster.evidence.baseline.accepted import Baseline, figures, load
from pytest_cluster.evidence.baseline.compare import compare
from pytest_cluster.evidence.baseline.files import read_inventory, read_results
from pytest_cluster.evidence.sinks.results import read_results as read_run_results
from pytest_cluster.evidence.untrusted_json import (
    cut,
)
from pytest_cluster.measure.inventory_file import InventoryDocument
from pytest_cluster.units import UNITS
from tests.evidence.baseline.test_compare import SPEC, _reseal
from tests.evidence.baseline.test_hardware import NODE

ID = ('{"unreadable": WHY} or a string of at most 4096 characters, a number, true, false or '
      'null')


def _write(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_results_lines_are_checked_and_a_cut_last_line_is_left_out(tmp_path: Path) -> None:
    run = {"type": "run", "started_at": 1795548710.5, "cluster": "c", "raw": [[[1]]]}
    result = {"type": "result", "case": "a::b", "clause": "gpus.count", "node": "n1",
              "gpu": 3, "measured": 8.0, "measured_base": 8, "unit": "", "comparison": ">=",
              "outcome": "passed", "message": "x" * 100_000}
    path = _write(tmp_path / "results.jsonl", [run, result, {"type": "other"}])
    with path.open("a") as out:
        out.write('{"type": "end", "sta')
    read = read_results(path)
    assert read.run == {"started_at": 1795548710.5, "cluster": "c"}
    assert read.results == [{k: v for k, v in result.items() if k not in ("type", "message")}]
    assert read.end is None and read.status == "interrupted"
    _write(path, [run, {**result, "gpu": "3"}])
    with pytest.raises(InputError) as caught:
        read_results(path)
    assert str(caught.value) == ("results.jsonl line 2: gpu: expected a whole number or "
                                 "null, found '3'")
    _write(path, [run, [result]])  # type: ignore[list-item]
    with pytest.raises(InputError, match=r'^results.jsonl line 2: the document: expected a '
                                         r'mapping with "type" \(a run, result or end line\), '
                                         r'found a list of 1 item\(s\)$'):
        read_results(path)


def _figure_refused(path: Path, **changed: Any) -> str:
    """read_results' message for a run line and one figure's line, `changed`."""
    run = {"type": "run", "started_at": 1795548710.5, "cluster": "c"}
    line = {"type": "result", "case": "a::m[n1-gpu0]", "clause": "gpus.matmul.bf16",
            "node": "n1", "gpu": 0, "measured": 801.5, "measured_base": 801.5e12,
            "unit": "TFLOPS", "comparison": ">=", "outcome": "passed"}
    _write(path, [run, {**line, **changed}])
    with pytest.raises(InputError) as caught:
        read_results(path)
    return str(caught.value)


FIGURE = ("a finite number, the figure in its unit's base (as a run writes it: measured x "
          "the unit's factor)")


def test_a_figure_that_is_no_number_is_refused_naming_its_line_and_field(
        tmp_path: Path) -> None:
    """A figure the comparison cannot read is no figure left out in silence (the
    `test_not_worse` case of that line gone, the cases one fewer): the baseline is
    refused, naming the line, the field and what was expected."""
    path = tmp_path / "results.jsonl"
    assert _figure_refused(path, measured_base="fast") == (
        f"results.jsonl line 2: measured_base: expected {FIGURE}, found 'fast'")
    for odd, said in ((True, "true"), (None, "null"), ([1], "a list of 1 item(s)")):
        assert _figure_refused(path, measured_base=odd) == (
            f"results.jsonl line 2: measured_base: expected {FIGURE}, found {said}")
    assert _figure_refused(path, measured="fast") == (
        "results.jsonl line 2: measured: expected a finite number, the figure in its unit "
        "(as a run writes it: measured_base / the unit's factor), found 'fast'")


def test_a_negative_figure_of_a_quantity_that_cannot_be_negative_is_refused(
        tmp_path: Path) -> None:
    """Each unit's least value is its dimension's (units.Dim.minimum): no rate, size,
    time or count below 0, no temperature below absolute zero; a figure below it is no
    run's."""
    path = tmp_path / "results.jsonl"
    for unit, (dim, factor) in UNITS.items():
        floor = "be negative" if dim.minimum == 0 else "be below absolute zero"
        below = dim.minimum - 5 * factor
        assert _figure_refused(path, unit=unit, measured=below / factor,
                               measured_base=below) == (
            f"results.jsonl line 2: measured_base: expected a number of at least "
            f"{dim.minimum:g} (a {dim.label} cannot {floor}), found {below!r}")
    assert _figure_refused(path, unit="", measured=-5, measured_base=-5).endswith(
        "expected a number of at least 0 (a count or a fraction cannot be negative), "
        "found -5")
    kept = tmp_path / "kept.jsonl"  # a temperature below 0 C is one
    _write(kept, [{"type": "run", "started_at": 1.0, "cluster": "c"},
                  {"type": "result", "case": "a::t", "clause": "gpus.temperature",
                   "measured": -5.0, "measured_base": -5.0, "unit": "C", "comparison": "<=",
                   "outcome": "passed"}])
    assert read_results(kept).results[0]["measured_base"] == -5.0


SUBNORMAL = ("expected 0 or a figure of at least 2.225e-308 (a figure a run can measure: a "
             "subnormal number is none, and any figure compared with it is beyond every share "
             "of it), found ")


@pytest.mark.parametrize("tiny", [5e-324, 1e-310, 2.2e-308])
def test_a_subnormal_figure_is_refused_naming_its_line_and_field(tmp_path: Path,
                                                                tiny: float) -> None:
    """A figure of 5e-324 (as measured, so measured x the unit's factor agrees): against it
    every figure's relative change was infinite and its comparison left out in silence
    (the run said '7 case(s), 0 failed'). No run measures a subnormal number: refused."""
    path = tmp_path / "results.jsonl"
    for unit, factor in (("", 1.0), ("s", 1.0), ("TFLOPS", 1e12)):
        if tiny * factor >= sys.float_info.min:
            continue  # in TFLOPS, 1e-310 is 1e-298 FLOP/s: a normal number, kept
        assert _figure_refused(path, unit=unit, measured=tiny, measured_base=tiny * factor) \
            == f"results.jsonl line 2: measured_base: {SUBNORMAL}{tiny * factor!r}"
    _write(path, [{"type": "run", "started_at": 1.0, "cluster": "c"},
                  {"type": "result", "case": "a::b", "clause": "c", "measured": 0,
                   "measured_base": 0, "unit": "", "comparison": "<=", "outcome": "passed"},
                  {"type": "result", "case": "a::c", "clause": "c", "measured": 2.3e-308,
                   "measured_base": 2.3e-308, "unit": "s", "comparison": "<=",
                   "outcome": "passed"}])
    assert [r["measured_base"] for r in read_results(path).results] == [0, 2.3e-308]


def test_a_figure_whose_measured_and_measured_base_disagree_is_refused(
        tmp_path: Path) -> None:
    """A run writes measured_base as measured x its unit's factor; a line where they
    disagree (measured 801.5 TFLOPS, measured_base 1e300) is not as the run wrote it, so
    the baseline is refused rather than compared on either number."""
    path = tmp_path / "results.jsonl"
    assert _figure_refused(path, measured_base=1e300) == (
        "results.jsonl line 2: measured_base: expected measured x the unit's factor "
        "(801.5 TFLOPS: 8.015e+14), found 1e+300: not the figure as its run wrote it")
    assert _figure_refused(path, unit="GB/s") == (
        "results.jsonl line 2: measured_base: expected measured x the unit's factor "
        "(801.5 GB/s: 8.015e+11), found 801500000000000.0: not the figure as its run wrote "
        "it")
    assert _figure_refused(path, unit="furlongs") == (
        "results.jsonl line 2: unit: expected a unit pytest-cluster writes (as a contract "
        "spells it: GB/s, TFLOPS, s, ...) or none, found 'furlongs'")
    # within rounding, as a run writes it, it is kept
    for unit, (_, factor) in UNITS.items():
        _write(path, [{"type": "run", "started_at": 1.0, "cluster": "c"},
                      {"type": "result", "case": "a::b", "clause": "c", "measured": 0.3,
                       "measured_base": 0.3 * factor, "unit": unit, "comparison": ">=",
                       "outcome": "passed"}])
        assert read_results(path).results[0]["measured"] == 0.3


def test_a_file_over_its_limit_is_refused_before_it_is_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(baseline_files.MAX_BYTES, "inventory.json", 100)
    monkeypatch.setitem(baseline_files.MAX_BYTES, "results.jsonl", 100)
    (tmp_path / "inventory.json").write_text('{"nodes": {}}' + " " * 100)
    with pytest.raises(InputError) as caught:
        baseline_files.check_sizes(tmp_path)
    assert str(caught.value) == ("inventory.json: 113 bytes, more than the 100 B a "
                                 "baseline's inventory may have")
    with pytest.raises(InputError, match=r"^inventory.json: 113 bytes, more than"):
        read_inventory(tmp_path / "inventory.json")
    _write(tmp_path / "results.jsonl", [{"type": "other", "x": "y" * 40}] * 3)
    with pytest.raises(InputError, match=r"^results.jsonl: 1\d\d bytes, more than the 100 B "
                                         r"a baseline's results may have$"):
        read_results(tmp_path / "results.jsonl")


def test_a_link_or_a_fifo_is_refused_never_followed_nor_waited_on(tmp_path: Path) -> None:
    """The size check lstats: a link is refused by its own name, never measured through
    (the size of a file outside the run, perhaps one it may not read); a fifo is never
    opened to wait on."""
    run = tmp_path / "run"
    run.mkdir()
    outside = tmp_path / "outside-secret.json"
    outside.write_text('{"nodes": {}}' + " " * 2**20)
    (run / "inventory.json").symlink_to(outside)
    with pytest.raises(InputError) as caught:
        baseline_files.check_sizes(run)
    assert str(caught.value) == (
        "inventory.json: a symbolic link, not the run's own file (a baseline's files are "
        "regular files of its directory: a link is never followed)")
    small = tmp_path / "small.json"
    small.write_text('{"nodes": {}}')
    (run / "inventory.json").unlink()
    (run / "inventory.json").symlink_to(small)
    with pytest.raises(InputError, match=r"^inventory.json: a symbolic link, not the run's"):
        baseline_files.check_sizes(run)
    with pytest.raises(InputError, match=r"^inventory.json: a symbolic link, not the run's"):
        read_inventory(run / "inventory.json")
    os.mkfifo(run / "results.jsonl")
    (run / "inventory.json").unlink()
    with pytest.raises(InputError) as caught:
        baseline_files.check_sizes(run)
    assert str(caught.value) == ("results.jsonl: a fifo, not a regular file (a baseline's "
                                 "files are regular files of its directory)")
    # read as the comparison reads it, in a process of its own: the old reader blocked
    done = subprocess.run(
        [sys.executable, "-c", "import sys; from pathlib import Path; from pytest_cluster."
         "evidence.baseline.files import read_results; read_results(Path(sys.argv[1]))",
         str(run / "results.jsonl")], capture_output=True, text=True, timeout=10,
        check=False)
    assert done.returncode == 1
    assert done.stderr.rstrip().endswith(
        "InputError: results.jsonl: a fifo, not a regular file (a baseline's files are "
        "regular files of its directory)")


# -- a fuzz of both files -------------------------------------------------------------------

SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
                    st.text(max_size=8), st.sampled_from(["n1", "n2", "unreadable", "gpus",
                                                          "serial", "index", "nodes"]))
JSON = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4),
    st.dictionaries(st.sampled_from(["nodes", "n1", "gpus", "serial", "index", "ports",
                                     "unreadable", "dmi", "software", "driver", "infiniband",
                                     "interfaces", "filesystems", "block_devices", "name",
                                     "machine_id", "rate", "port", "path"]) | st.text(
                                         max_size=3), inner, max_size=5)), max_leaves=30)
NOW: InventoryDocument = {"nodes": {"n1": {"machine_id": "m", "gpus": [{"index": 0, "serial": "s"}],
                        "infiniband": [{"name": "mlx5_0", "ports": [{"port": "1"}]}],
                        "software": {"driver": "1"}, "filesystems": [{"path": "/d"}]}}}


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow,
          HealthCheck.function_scoped_fixture])
@given(document=JSON, nodes=st.dictionaries(st.sampled_from(["n1", "n2"]), JSON, max_size=2),
       raw=st.binary(max_size=40))
def test_any_inventory_is_taken_and_compared_or_refused_in_one_line(
        tmp_path: Path, document: Any, nodes: dict[str, Any], raw: bytes) -> None:
    for data in (json.dumps(document).encode(), json.dumps({"nodes": nodes}).encode(), raw):
        path = tmp_path / "inventory.json"
        path.write_bytes(data)
        try:
            inventory = read_inventory(path)
        except InputError as exc:
            assert str(exc).startswith("inventory.json: ") and "\n" not in str(exc)
            assert len(str(exc)) < 1000
            continue
        taken = Baseline(tmp_path, "x", (), "0" * 64, inventory, {})
        for case in compare(taken, NOW, tmp_path / "none.jsonl", 0.05):
            assert len(case.message) < 20_000


def _paths(value: Any, at: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    """Every place in `value`, containers and leaves."""
    found = [at]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*at, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, (*at, index))
    return found


def _replaced(value: Any, at: tuple[str | int, ...], new: Any) -> Any:
    if not at:
        return new
    copy = json.loads(json.dumps(value))
    inner = copy
    for step in at[:-1]:
        inner = inner[step]
    inner[at[-1]] = new
    return copy


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow,
          HealthCheck.function_scoped_fixture])
@given(place=st.sampled_from(_paths(NODE)), new=JSON)
def test_a_real_node_with_any_one_part_replaced_is_compared_or_refused_in_one_line(
        tmp_path: Path, place: tuple[str | int, ...], new: Any) -> None:
    path = tmp_path / "inventory.json"
    path.write_text(json.dumps({"nodes": {"n1": _replaced(NODE, place, new), "n2": NODE}}))
    try:
        inventory = read_inventory(path)
    except InputError as exc:
        assert str(exc).startswith("inventory.json: ") and "\n" not in str(exc)
        assert len(str(exc)) < 1000
        return
    taken = Baseline(tmp_path, "x", (), "0" * 64, inventory, {})
    for case in compare(taken, {"nodes": {"n1": NODE, "n2": NODE}}, tmp_path / "none", 0.05):
        assert len(case.message) < 20_000
        assert case.passed or case.node == "n1"


FIELDS = ("case", "clause", "node", "gpu", "measured", "measured_base", "unit", "comparison",
          "outcome", "started_at", "cluster", "status")
RESULT_FIELDS = st.fixed_dictionaries(
    {"type": st.sampled_from(["run", "result", "end"])}, optional=dict.fromkeys(FIELDS, JSON))


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow,
          HealthCheck.function_scoped_fixture])
@given(lines=st.lists(RESULT_FIELDS | JSON, max_size=4), raw=st.binary(max_size=40))
def test_any_results_file_is_taken_or_refused_in_one_line(
        tmp_path: Path, lines: list[Any], raw: bytes) -> None:
    path = tmp_path / "results.jsonl"
    for data in ("".join(json.dumps(line) + "\n" for line in lines).encode(), raw + b"\n"):
        path.write_bytes(data)
        try:
            read = read_results(path)
        except InputError as exc:
            assert str(exc).startswith("results.jsonl") and "\n" not in str(exc)
            assert len(str(exc)) < 1000
            continue
        figures(read.results)
        assert read.status


# -- whole runs against hostile baselines ---------------------------------------------------

@pytest.fixture(scope="module")
def accepted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real sealed run of the sim (unsigned), made once."""
    where = tmp_path_factory.mktemp("accepted")
    (where / "trial.yaml").write_text(SPEC.format(faults="", baseline=""))
    done = subprocess.run([sys.executable, "-m", "pytest", "--cluster=trial.yaml", "-q",
                           "-p", "no:cacheprovider", "--cluster-reports=reports"],
                          cwd=where, capture_output=True, check=False)
    assert done.returncode == 0, done.stdout[-3000:]
    return (where / "reports" / "latest").resolve()


def _inventory(edit: Callable[[dict[str, Any]], Any]) -> Callable[[Path], None]:
    def change(base: Path) -> None:
        document = json.loads((base / "inventory.json").read_text())
        edit(document)
        (base / "inventory.json").write_text(json.dumps(document))
    return change


def _text(name: str, change: Callable[[str], str]) -> Callable[[Path], None]:
    def edit(base: Path) -> None:
        (base / name).write_text(change((base / name).read_text()))
    return edit


def _second_line(change: Callable[[dict[str, Any]], str]) -> Callable[[Path], None]:
    def edit(base: Path) -> None:
        lines = (base / "results.jsonl").read_text().splitlines()
        lines[1] = change(json.loads(lines[1]))
        (base / "results.jsonl").write_text("\n".join(lines) + "\n")
    return edit


def _not_utf8(path: Path) -> None:
    path.write_bytes(path.read_bytes().replace(b'"n1"', b'"n\xff"', 1))


NESTED = "[" * 200_000 + "]" * 200_000
ESCAPES = "\x1b[2J" * 2000  # clear the screen, in a terminal that shows it
HOSTILE: dict[str, tuple[Callable[[Path], None], str]] = {
    "5000-character machine id": (
        _inventory(lambda d: d["nodes"]["n2"].update(machine_id="a" * 5000)),
        f"inventory.json: nodes.n2.machine_id: expected {ID}, found a string of 5000 "
        f"characters, {cut('a' * 61)}"),
    # issue 38: what the spec allows bounds the baseline, before its shape is checked
    "30 MB machine id": (
        _inventory(lambda d: d["nodes"]["n2"].update(machine_id="a" * 30 * 2**20)),
        "inventory.json: 31489056 bytes, more than the 1.062 MiB a baseline's inventory of 4 "
        "node(s) (the spec's cluster.nodes) may have"),
    "1000000 tiny GPUs": (
        _inventory(lambda d: d["nodes"]["n2"].update(gpus=[{"index": 0}] * 1_000_000)),
        "* bytes, more than the 1.062 MiB a baseline's inventory of 4 node(s) (the spec's "
        "cluster.nodes) may have"),
    "50000 tiny GPUs": (
        _inventory(lambda d: d["nodes"]["n2"].update(gpus=[{"index": 0}] * 50_000)),
        "inventory.json: nodes.n2.gpus: 50000 GPUs, more than the 8 per node the spec's "
        "gpus.count (8) allows"),
    "a ninth GPU": (
        _inventory(lambda d: d["nodes"]["n1"]["gpus"].append(d["nodes"]["n1"]["gpus"][0])),
        "inventory.json: nodes.n1.gpus: 9 GPUs, more than the 8 per node the spec's "
        "gpus.count (8) allows"),
    "a fifth node": (
        _inventory(lambda d: d["nodes"].update(n5=d["nodes"]["n1"])),
        "inventory.json: 5 nodes, more than the 4 the spec names (cluster.nodes): not a "
        "baseline of this cluster"),
    "a node's key no run writes": (
        _inventory(lambda d: d["nodes"]["n3"].update(padding=["x"] * 1000)),
        "inventory.json: nodes.n3: the key 'padding', which no run writes (expected some of "
        "cpu, dmi, filesystems, gpus, hostname, infiniband, interfaces, kernel, machine_id, "
        "memory_bytes, nccl_source, os, simulated, software, unreadable)"),
    "a GPU's key no run writes": (
        _inventory(lambda d: d["nodes"]["n1"]["gpus"][2].update(extra={"a": 1})),
        "inventory.json: nodes.n1.gpus[2]: the key 'extra', which no run writes (expected "
        "some of board_part, index, name, pci_bus_id, serial, unreadable, uuid, vbios)"),
    "a document's key no run writes": (
        _inventory(lambda d: d.update(bulk="x" * 1000)),
        "inventory.json: the key 'bulk', which no run writes (expected some of cluster, "
        "complete, nodes, schema, simulated, taken_at)"),
    "4000000 result lines": (
        _text("results.jsonl", lambda t: t + '{"type": "other"}\n' * 4_000_000),
        "* bytes, more than the 4.062 MiB a baseline's results of 4 node(s) (the spec's "
        "cluster.nodes) may have"),
    "a node a string": (
        _inventory(lambda d: d["nodes"].update(n3="gpu-003")),
        "inventory.json: nodes.n3: expected {\"unreadable\": WHY} or a mapping of a node's "
        "inventory, found 'gpu-003'"),
    "a serial a list": (
        _inventory(lambda d: d["nodes"]["n1"]["gpus"][3].update(serial=["165"])),
        f"inventory.json: nodes.n1.gpus[3].serial: expected {ID}, found a list of 1 item(s)"),
    "ports a number": (
        _inventory(lambda d: d["nodes"]["n1"]["infiniband"][0].update(ports=5)),
        "inventory.json: nodes.n1.infiniband[0].ports: expected {\"unreadable\": WHY} or a "
        "list of ports (mappings), found 5"),
    "GPUs a string": (
        _inventory(lambda d: d["nodes"]["n1"].update(gpus="8 x H100")),
        "inventory.json: nodes.n1.gpus: expected {\"unreadable\": WHY} or a list of GPUs "
        "(mappings), found '8 x H100'"),
    "an escape-laden serial": (
        _inventory(lambda d: d["nodes"]["n1"]["gpus"][0].update(serial=ESCAPES)),
        f"inventory.json: nodes.n1.gpus[0].serial: expected {ID}, found a string of 8000 "
        f"characters, {cut(ESCAPES)}"),
    "a lone surrogate": (
        _text("inventory.json", lambda t: t.replace('"machine_id": "', '"machine_id": "\\ud800',
                                                    1)),
        "inventory.json: nodes.n1.machine_id: expected {\"unreadable\": WHY} or a string of "
        "at most 4096 characters, a number, true, false or null, found "),
    "200000 nested [": (
        _text("inventory.json", lambda t: t.replace('"nodes": {', f'"x": {NESTED}, "nodes": {{',
                                                    1)),
        "inventory.json: nested too deeply to be read (expected the few levels of [ and { "
        "that pytest-cluster writes)"),
    "non-UTF-8": (
        lambda base: _not_utf8(base / "inventory.json"),
        "inventory.json: byte "),
    "a key twice": (
        _text("inventory.json", lambda t: t.replace('"nodes": {', '"nodes": {}, "nodes": {',
                                                    1)),
        "inventory.json: the key 'nodes' twice in one object (expected each key once)"),
    "NaN": (
        _second_line(lambda r: json.dumps({**r, "measured_base": float("nan")})),
        "results.jsonl line 2: NaN (expected a finite number: JSON has no NaN or Infinity)"),
    "Infinity": (
        _second_line(lambda r: json.dumps({**r, "measured": float("inf")})),
        "results.jsonl line 2: Infinity (expected a finite number: JSON has no NaN or "
        "Infinity)"),
    "measured_base a string": (
        _second_line(lambda r: json.dumps({**r, "measured_base": "fast"})),
        f"results.jsonl line 2: measured_base: expected {FIGURE}, found 'fast'"),
    "measured_base negative": (
        _second_line(lambda r: json.dumps({**r, "measured_base": -5})),
        "results.jsonl line 2: measured_base: expected a number of at least 0 (a count or a "
        "fraction cannot be negative), found -5"),
    "measured_base 5e-324": (  # issue 48: the run said "7 case(s), 0 failed"
        _second_line(lambda r: json.dumps({**r, "measured": 5e-324, "measured_base": 5e-324})),
        f"results.jsonl line 2: measured_base: {SUBNORMAL}5e-324"),
    "measured_base 1e300": (
        _second_line(lambda r: json.dumps({**r, "measured_base": 1e300})),
        "results.jsonl line 2: measured_base: expected measured x the unit's factor (8: 8), "
        "found 1e+300: not the figure as its run wrote it"),
    "a case a mapping": (
        _second_line(lambda r: json.dumps({**r, "case": {"id": r["case"]}})),
        "results.jsonl line 2: case: expected a string of at most 4096 characters, found a "
        "mapping of 1 key(s)"),
    "nested raw": (
        _second_line(lambda r: json.dumps(r)[:-1] + f', "raw2": {NESTED}}}'),
        "results.jsonl line 2: nested too deeply to be read (expected the few levels of [ "
        "and { that pytest-cluster writes)"),
    "a start past 9999": (
        _text("results.jsonl", lambda t: t.replace('"started_at": ', '"started_at": 1e300, '
                                                   '"x": ', 1)),
        "results.jsonl line 1: started_at: expected a number from 0 to 2.53402e+11 (seconds "
        "since 1970, UTC), found 1e+300"),
    "an empty results.jsonl": (
        _text("results.jsonl", lambda t: ""),
        "results.jsonl: no run line (expected the results of a run, which start with the run "
        "line pytest-cluster writes; this one is empty)"),
    "no run line": (
        _text("results.jsonl", lambda t: t.split("\n", 1)[1]),
        "results.jsonl line 1: a result line where the run line was expected first "
        "(results.jsonl starts with the run line pytest-cluster writes)"),
    "two runs in one": (
        _text("results.jsonl", lambda t: t + t.split("\n", 1)[0] + "\n"),
        "results.jsonl line "),
}


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    (pytester.path / "trial.yaml").write_text(SPEC.format(faults="", baseline=""))
    return pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                              "--cluster-reports=now", *args)


def _refused_in_one_line(result: pytest.RunResult, expected: str) -> None:
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line]
    assert len(errors) == 1, errors
    assert errors[0].startswith(expected) if expected.endswith(" ") else \
        errors[0] == expected, errors[0][:2000]
    assert len(result.stdout.str()) + len(result.stderr.str()) < 2000


def case_file(case: str) -> str:
    return "results.jsonl" if "result lines" in case else "inventory.json"


@pytest.mark.slow
@pytest.mark.parametrize("case", HOSTILE)
def test_a_hostile_baseline_is_a_usage_error_before_anything_runs(
        pytester: pytest.Pytester, accepted: Path, case: str) -> None:
    base = pytester.path / "base"
    shutil.copytree(accepted, base)
    edit, message = HOSTILE[case]
    edit(base)
    _reseal(base)
    result = _run(pytester, f"--cluster-baseline={base}")
    if message.startswith("*"):  # a size: the file's name, then its bytes
        _refused_in_one_line(result, f"ERROR: --cluster-baseline={base}: {case_file(case)}: ")
        assert result.stderr.lines[0].endswith(message[1:])
    else:
        _refused_in_one_line(result, f"ERROR: --cluster-baseline={base}: {message}")
    assert not (pytester.path / "now").exists()


def test_a_baseline_over_its_size_is_refused_before_verify_reads_it(
        pytester: pytest.Pytester, accepted: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(baseline_files.MAX_BYTES, "inventory.json", 2**10)
    base = pytester.path / "base"
    shutil.copytree(accepted, base)
    size = (base / "inventory.json").stat().st_size
    result = _run(pytester, f"--cluster-baseline={base}")
    _refused_in_one_line(result, f"ERROR: --cluster-baseline={base}: inventory.json: {size} "
                                 "bytes, more than the 1 KiB a baseline's inventory may have")
    assert not (pytester.path / "now").exists()


def test_a_baseline_whose_file_is_a_link_out_of_it_is_refused_naming_only_its_file(
        pytester: pytest.Pytester, accepted: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(baseline_files.MAX_BYTES, "inventory.json", 2**10)
    base = pytester.path / "base"
    shutil.copytree(accepted, base)
    outside = pytester.path / "elsewhere-secret.json"
    outside.write_text('{"nodes": {}}' + " " * 2**20)
    (base / "inventory.json").unlink()
    (base / "inventory.json").symlink_to(outside)
    result = _run(pytester, f"--cluster-baseline={base}")
    _refused_in_one_line(result, f"ERROR: --cluster-baseline={base}: inventory.json: a "
                                 "symbolic link, not the run's own file (a baseline's files "
                                 "are regular files of its directory: a link is never "
                                 "followed)")
    assert "elsewhere" not in result.stdout.str() + result.stderr.str()
    assert str(2**20 + 13) not in result.stderr.str()
    assert not (pytester.path / "now").exists()


def test_empty_or_missing_baseline_options_are_usage_errors(pytester: pytest.Pytester,
                                                           accepted: Path) -> None:
    _refused_in_one_line(_run(pytester, "--cluster-baseline="),
                         "ERROR: --cluster-baseline= is empty: expected a run's evidence "
                         "directory (one that passes pytest-cluster verify)")
    _refused_in_one_line(_run(pytester, f"--cluster-baseline={accepted}",
                              "--cluster-baseline-key="),
                         "ERROR: --cluster-baseline-key= is empty: expected a public key file "
                         "(PEM or OpenSSH) the baseline must be signed by")
    _refused_in_one_line(_run(pytester, f"--cluster-baseline={accepted}",
                              "--cluster-reports="),
                         "ERROR: --cluster-baseline needs this run's evidence to compare with "
                         "it: --cluster-reports= is empty (expected a directory)")
    nowhere = pytester.path / "nowhere"
    _refused_in_one_line(_run(pytester, f"--cluster-baseline={nowhere}"),
                         f"ERROR: --cluster-baseline={nowhere}: {nowhere}: not a directory "
                         "(No such file or directory); expected a run's evidence directory, "
                         "e.g. reports/latest")
    _refused_in_one_line(_run(pytester, f"--cluster-baseline={accepted}",
                              f"--cluster-baseline-key={nowhere}"),
                         f"ERROR: --cluster-baseline={accepted}: {nowhere}: cannot read ")
    assert not (pytester.path / "now").exists()


@pytest.mark.slow
def test_a_figure_of_another_unit_fails_its_case_saying_why(pytester: pytest.Pytester,
                                                           accepted: Path) -> None:
    base = pytester.path / "base"
    shutil.copytree(accepted, base)
    lines = (base / "results.jsonl").read_text().splitlines()
    changed = None
    for index, line in enumerate(lines):
        record = json.loads(line)
        if record.get("clause") == "gpus.matmul.bf16" and changed is None:
            changed = record["case"]
            # as a run of a contract that bounded it in GB/s would have written it
            lines[index] = json.dumps({**record, "unit": "GB/s", "measured":
                                       record["measured_base"] / UNITS["GB/s"][1]})
    (base / "results.jsonl").write_text("\n".join(lines) + "\n")
    _reseal(base)
    result = _run(pytester, f"--cluster-baseline={base}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    failed = [r for r in read_run_results(pytester.path / "now" / "latest" /
                                          "results.jsonl").results if r["outcome"] == "failed"]
    assert [r["compared_case"] for r in failed] == [changed]
    assert failed[0]["message"].endswith(
        "gpus.matmul.bf16: in TFLOPS now, in GB/s at baseline: not the same quantity, so "
        f"not compared ({load(base).label})")
    assert load(base).label.startswith("run 20") and load(base).label.endswith("Z")

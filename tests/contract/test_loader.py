from __future__ import annotations

import contextlib
import dataclasses
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_cluster.contract import load_spec, parse_spec
from pytest_cluster.contract.clauses import keys
from pytest_cluster.contract.launchers import KINDS
from pytest_cluster.contract.model import Rule
from pytest_cluster.contract.sections import LISTED
from pytest_cluster.contract.sections.storage import AT_ONCE
from pytest_cluster.errors import SpecError

GOOD = """\
cluster:
  name: acme-h100-trial
  nodes:
    - gpu-[001-002]
    - login01
  python: /shared/venv/bin/python
  probe_timeout: 5 min
host:
  cpu_cores: ">= 192"
  memory: ">= 1.5 TiB"
  software: {kernel: ">= 5.15", torch: ">= 2.4"}
storage:
  - path: /data/
    shared: true
    capacity: ">= 100 TiB"
    write: ">= 10 GB/s"
    import_torch: "<= 5 s"
    io_size: 4 GiB
"""


def error_of(text: str, file: str = "trial.yaml") -> str:
    """The SpecError a spec text is refused with."""
    with pytest.raises(SpecError) as info:
        parse_spec(text, file)
    return str(info.value)


def test_good_spec_becomes_frozen_records() -> None:
    spec = parse_spec(GOOD, "trial.yaml")
    assert spec.cluster.nodes == ("gpu-001", "gpu-002", "login01")
    assert spec.cluster.probe_timeout_s == 300.0
    assert spec.host.cpu_cores is not None
    assert spec.host.cpu_cores.key == "host.cpu_cores"
    assert spec.host.cpu_cores.line == 9
    memory = spec.host.clause("memory")
    assert memory is not None
    assert memory.requirement.bound.value == 1.5 * 2**40
    assert [c.name for c in spec.host.software] == ["kernel", "torch"]
    fs = spec.storage[0]
    assert fs.path == "/data"
    assert fs.shared is True
    assert fs.python == "/shared/venv/bin/python"
    assert fs.io_size_bytes == 4 * 2**30
    assert fs.write is not None
    assert fs.write.key == "storage[/data].write"
    assert fs.read is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.cluster.name = "other"  # type: ignore[misc]


@pytest.mark.parametrize(("text", "message"), [
    ("", "trial.yaml: the spec is empty; it needs at least a cluster section with name and "
         "nodes"),
    ("# only a comment\n", "trial.yaml: the spec is empty; it needs at least a cluster section "
                           "with name and nodes"),
    # every section the registry lists (extensions' too), not three of them
    ("- a\n- b\n", f"trial.yaml:1: the spec must be a map of its sections ({', '.join(LISTED)}); "
                   "got a list (is this file a spec?)"),
    # nothing of a file that is not a spec is echoed (a token, a password file's lines)
    ("ghp_SECRET123\n", f"trial.yaml:1: the spec must be a map of its sections "
                        f"({', '.join(LISTED)}); got a scalar (is this file a spec?)"),
    ("cluster: {name: x, nodes: [a]}\nroot:$6$secret:19000:0::: x\n",
     "trial.yaml:2: <key not shown>: unknown key, not a plain name (not shown: is this file a "
     f"spec? known keys: {', '.join(LISTED)})"),
    ("cluster: [a]\n", "trial.yaml:1: cluster: expected a map of name, nodes, launcher, python, "
                       "probe_timeout, probe_output, parallel, got a list"),
    ("cluster: {name: x, nodes: a}\nhost:\n  cpu_cores: >= 192\n",
     "trial.yaml:3: YAML syntax error: expected chomping or indentation indicators, but found "
     "'=' (quote values that start with '>' or '<', e.g. cpu_cores: \">= 192\")"),
    ("cluster: {name: x, nodes: [gpu-[1-2], b]}\n",
     "trial.yaml:1: YAML syntax error: expected ',' or ']', but got '[' (quote hostlists inside "
     "[...] lists, e.g. nodes: ['gpu-[001-004]', login01])"),
    ("cluster: {name: x, nodes: a\n", "trial.yaml:2: YAML syntax error: expected ',' or '}', "
                                      "but got '<stream end>'"),
    ("cluster: {name: x, nodes: a}\nstorage:\n  - path: /data\n    write: 10 gigs\n",
     "trial.yaml:4: storage[/data].write: expected a rate like '10 GB/s', got '10 gigs' (unknown "
     "unit 'gigs'; known units: MB/s, GB/s, TB/s, MiB/s, GiB/s (bytes); Mb/s, Gb/s, Gbps, "
     "Tb/s (bits))"),
    ("cluster: {name: x, nodes: a}\nhost:\n  memroy: 1 TiB\n",
     "trial.yaml:3: host.memroy: unknown key; did you mean 'memory'? (known keys: "
     f"{', '.join(keys('host'))})"),
    ("cluster: {name: x, nodes: a}\nstorage:\n  - path: /d\n    wirte: 1 GB/s\n",
     "trial.yaml:4: storage[/d].wirte: unknown key; did you mean 'write'? (known keys: "
     f"{', '.join(keys('storage'))})"),
    ("cluster: {name: x, nodes: a}\nstorage: {path: /data}\n",
     "trial.yaml:2: storage: expected a list of filesystems (- path: /data ...), got a map"),
    ("cluster: {name: x, nodes: 'a;rm -rf /'}\n",
     "trial.yaml:1: cluster.nodes: 'a;rm -rf /' is not a valid hostname (letters, digits, '-', "
     "'_' and '.')"),
    ("cluster: {name: x, nodes: [a, b, a]}\n",
     "trial.yaml:1: cluster.nodes[2]: node 'a' is listed twice"),
    ("cluster: {name: x, nodes: [gpu-1, GPU-1]}\n",
     "trial.yaml:1: cluster.nodes[1]: node 'GPU-1' is listed twice (a host name's case does "
     "not matter)"),
    ("cluster: {name: x}\n", "trial.yaml:1: cluster.nodes: missing: list the nodes, e.g. "
                             "nodes: gpu-[001-004]"),
    ("host: {cpu_cores: 1}\n", "trial.yaml: cluster: missing section (needs at least name and "
                               "nodes)"),
    ("cluster: {name: x, nodes: a, launcher: pbs}\n",
     f"trial.yaml:1: cluster.launcher: expected one of {', '.join(KINDS)}, got 'pbs'"),
    ("cluster: {name: x, nodes: a}\ncluster: {name: y, nodes: b}\n",
     "trial.yaml:2: cluster: duplicate key (first given on line 1)"),
    ("cluster: {name: x, nodes: a}\nstorage:\n  - path: data\n",
     "trial.yaml:3: storage[0].path: expected an absolute path like /data, got 'data'"),
    ("cluster: {name: x, nodes: a}\nstorage:\n  - shared: true\n",
     "trial.yaml:3: storage[0].path: missing: which filesystem path to test"),
    # a path is in every clause name, so in reasons and drain lines: one printable line
    ("cluster: {name: x, nodes: a}\nstorage:\n  - path: \"/x\\ntouch /tmp/p #\"\n",
     "trial.yaml:3: storage[0].path: expected an absolute path like /data of printable "
     "characters, got '/x\\ntouch /tmp/p #' (not printable: U+000A at position 3)"),
    ("cluster: {name: x, nodes: a}\nstorage:\n  - path: /d\n  - path: /d/\n",
     "trial.yaml:4: storage[1].path: /d is listed twice"),
    ("cluster: {name: x, nodes: a}\nhost:\n  software: {torch: latest}\n",
     "trial.yaml:3: host.software.torch: expected a version bound like '>= 5.15', "
     "got 'latest'"),
    ("cluster: {name: x, nodes: a}\nhost:\n  cpu_cores: [1, 2]\n",
     "trial.yaml:3: host.cpu_cores: expected a count like 192, got a list"),
    ("cluster: {name: x, nodes: a}\ninterconnect: {busbw: 0.8}\n",
     "trial.yaml:2: interconnect.payloads: missing: the payload sizes the contract names, "
     "e.g. payloads: [4 GiB, 16 GiB] (busbw depends on the size)"),
    ("cluster: {name: x, nodes: a}\nstorage:\n  - path: /d\n    shared: maybe\n",
     "trial.yaml:4: storage[/d].shared: expected true or false, got 'maybe'"),
    ("cluster: {name: x, nodes: a, parallel: 0}\n",
     "trial.yaml:1: cluster.parallel: expected a whole number >= 1, got 0"),
])
def test_errors_are_exact(text: str, message: str) -> None:
    assert error_of(text) == message


def test_all_problems_are_listed_in_line_order() -> None:
    text = ("cluster: {name: x, nodes: a}\nhost:\n  memroy: 1 TiB\n  cpu_cores: many\n"
            "storage:\n  - path: rel\n")
    assert error_of(text) == (
        "trial.yaml: 3 problems in the spec:\n"
        "  trial.yaml:3: host.memroy: unknown key; did you mean 'memory'? (known keys: "
        "cpu_cores, cpu_threads, memory, memory_available, software, same_software, golden)\n"
        "  trial.yaml:4: host.cpu_cores: expected a count like 192, got 'many'\n"
        "  trial.yaml:6: storage[0].path: expected an absolute path like /data, got 'rel'")


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r"nope.yaml: no such file$"):
        load_spec(tmp_path / "nope.yaml")


def test_directory_and_binary(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r": is a directory, expected a YAML spec file$"):
        load_spec(tmp_path)
    binary = tmp_path / "b.yaml"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(SpecError, match=r"b.yaml: not UTF-8 text \(byte 0\)$"):
        load_spec(binary)


def test_yaml_tags_are_not_executed() -> None:
    message = error_of("cluster: !!python/object/apply:os.system ['true']\n")
    assert message == ("trial.yaml:1: YAML tag 'tag:yaml.org,2002:python/object/apply:os.system' "
                       "is not allowed; a spec is plain data")


def test_example_specs_are_valid() -> None:
    for path in sorted(Path(__file__).parents[2].joinpath("examples").glob("*.yaml")):
        load_spec(path)


yaml_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
              st.text(max_size=12)),
    lambda children: st.one_of(st.lists(children, max_size=4),
                               st.dictionaries(st.sampled_from(
                                   ["cluster", "name", "nodes", "host", "storage", "path",
                                    "write", "memory", "software", "torch", "x"]) | st.text(
                                   max_size=6), children, max_size=4)),
    max_leaves=20)


@settings(max_examples=200, deadline=None)
@given(yaml_values)
def test_arbitrary_documents_raise_only_spec_error(document: object) -> None:
    text = yaml.safe_dump(document)
    with contextlib.suppress(SpecError):
        parse_spec(text, "fuzz.yaml")


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80))
def test_arbitrary_text_raises_only_spec_error(text: str) -> None:
    with contextlib.suppress(SpecError):
        parse_spec(text, "fuzz.yaml")


def test_a_spec_that_promises_nothing_is_refused() -> None:
    assert error_of("cluster: {name: x, nodes: a}\nstorage:\n  - path: /data\n") == (
        "trial.yaml: nothing to test: the spec has no host, storage, gpus or interconnect "
        "clauses (see examples/trial.yaml)")


def test_several_nodes_promise_the_same_software_by_default() -> None:
    spec = parse_spec("cluster: {name: x, nodes: 'n[1-2]'}\n", "trial.yaml")
    assert spec.host.same_software is True


SIM_BASE = "cluster: {name: x, nodes: 'n[1-2]', launcher: sim}\n"


@pytest.mark.parametrize(("text", "message"), [
    ("gpus: {count: 8, model: H100-SXM}\nsim: {}\n",
     "t.yaml:2: gpus.model: unknown GPU model 'H100-SXM'; did you mean 'H100-SXM-80GB'? "
     "known: H100-SXM-80GB, H100-PCIe-80GB, H100-NVL-94GB, H200-SXM-141GB, B200-SXM-180GB, "
     "A100-SXM4-80GB, A100-SXM4-40GB, A100-PCIe-80GB"),
    ("gpus: {count: 8, pcie: slow}\nsim: {}\n",
     "t.yaml:2: gpus.pcie: expected true or 'max' (the default), or false to leave it out, "
     "got 'slow'"),
    ("gpus: {count: 0}\nsim: {}\n", "t.yaml:2: gpus.count: expected between 1 and 64 GPUs "
                                    "per node"),
    ("gpus: {model: H100-SXM-80GB}\nsim: {}\n",
     "t.yaml:2: gpus.count: missing: how many GPUs per node, e.g. count: 8"),
    ("gpus: {count: 8, usable_memory: lots}\nsim: {}\n",
     "t.yaml:2: gpus.usable_memory: expected a share of total like '95%' or a size like "
     "'76 GiB', got 'lots'"),
    ("gpus: {count: 8, matmul: {int8: '>= 1 TFLOPS'}}\nsim: {}\n",
     "t.yaml:2: gpus.matmul.int8: unknown key (known keys: bf16, fp16, tf32, fp32, fp8)"),
    ("gpus: {count: 8, matmul: {bf16: '>= 1 TB/s'}}\nsim: {}\n",
     "t.yaml:2: gpus.matmul.bf16: expected a compute rate like '800 TFLOPS', got '>= 1 TB/s' "
     "(that is a rate)"),
    ("gpus: {count: 8, temperature: 90}\nsim: {}\n",
     "t.yaml:2: gpus.temperature: expected a temperature like '85 C', got 90 (a number needs "
     "a unit)"),
    ("gpus: {count: 8, matmul_size: [1024, 2048]}\nsim: {}\n",
     "t.yaml:2: gpus.matmul_size: expected [m, n, k], got 2 values"),
    ("gpus: {count: 8, matmul_size: big}\nsim: {}\n",
     "t.yaml:2: gpus.matmul_size: expected a matrix size from 16 to 65536, or [m, n, k], got "
     "'big'"),
    ("gpus: {count: 8, load_time: 0 s}\nsim: {}\n",
     "t.yaml:2: gpus.load_time: expected a time from 1 s to 1 h, got '0 s'"),
    ("gpus: {count: 8}\nsim: {latency: 2 min}\n",
     "t.yaml:3: sim.latency: expected a time from 0 to 1 min, got '2 min'"),
    ("gpus: {count: 8}\nsim: {faults: [{node: n9, gpu: 1}]}\n",
     "t.yaml:3: sim.faults[0].node: expected one of the cluster's nodes, got 'n9'"),
    ("gpus: {count: 8}\nsim: {faults: [{node: n1, gpu: 8}]}\n",
     "t.yaml:3: sim.faults[0].gpu: expected a GPU index from 0 to 7 (sim.gpus_per_node: 8), "
     "got 8"),
    ("gpus: {count: 8}\nsim: {faults: [{node: n1, throttle: hot}]}\n",
     "t.yaml:3: sim.faults[0].throttle: expected one of hw_slowdown, sw_thermal, hw_thermal, "
     "power_brake, got 'hot'"),
    ("gpus: {count: 8}\nsim: {faults: [{node: n1, memory_held: 5 GiB}]}\n",
     "t.yaml:3: sim.faults[0].gpu: missing: a GPU fault needs the GPU index (gpu: 3)"),
    ("gpus: {count: 8}\n",
     "t.yaml: sim: missing: launcher sim needs a sim section (gpu_model, gpus_per_node, "
     "faults)"),
    ("gpus: {count: 8}\nsim: {}\nstorage:\n  - path: /data\n    write: '>= 1 GB/s'\n",
     "t.yaml:6: storage[/data].write: the sim launcher simulates a shared filesystem as the "
     "cluster uses it, not a node's disk: only "
     f"{', '.join(AT_ONCE)} (test a node's disk with launcher: local, ssh or slurm)"),
])
def test_gpu_and_sim_errors_are_exact(text: str, message: str) -> None:
    with pytest.raises(SpecError) as info:
        parse_spec(SIM_BASE + text, "t.yaml")
    assert str(info.value) == message


def test_sim_section_only_with_the_sim_launcher() -> None:
    assert error_of("cluster: {name: x, nodes: a}\ngpus: {count: 1}\nsim: {}\n") == (
        "trial.yaml:3: sim: only used with launcher: sim (the launcher is 'local')")


def test_gpu_defaults_are_safe() -> None:
    spec = parse_spec("cluster: {name: x, nodes: a}\ngpus: {count: 8}\n", "t.yaml")
    gpus = spec.gpus
    assert gpus is not None
    assert gpus.slots == 8
    temperature, ecc = gpus.clause("temperature"), gpus.clause("ecc_uncorrected")
    assert temperature is not None and temperature.requirement.text == "<= 85 C"
    assert ecc is not None and ecc.requirement.text == "<= 0"
    for rule in (gpus.row_remap, gpus.pcie, gpus.nvlink, gpus.throttle, gpus.xid):
        assert isinstance(rule, Rule) and rule.line == 0
    assert (gpus.memory, gpus.usable_memory, gpus.matmul) == (None, None, ())
    off = parse_spec("cluster: {name: x, nodes: a}\ngpus: {count: 8, nvlink: 12, xid: false}\n",
                     "t.yaml").gpus
    assert off is not None and off.xid is None
    links = off.clause("nvlink")  # a number of links instead of the rule
    assert links is not None and links.requirement.text == ">= 12"


def test_a_section_declared_without_a_parser_is_its_declared_clauses(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's recipe for a spec section: its clauses declared and one line in
    SECTIONS, no parser, record or Spec field of its own. The loader knows its keys (and
    refuses others, naming the file, line and key), its record promises what it says, and
    a case of its clause is promised, or not in contract when the section is left out."""
    from pytest_cluster.contract import clauses, loader
    from pytest_cluster.contract import sections as registry
    from pytest_cluster.contract.declaration import Actor, Declaration, Fault, Reads, Value
    from pytest_cluster.contract.model import SectionSpec
    from pytest_cluster.contract.promised import promised
    from pytest_cluster.units import Dim

    outlets = Declaration("pdu", "outlets", Value.QUANTITY, Dim.COUNT,
                          reads=Reads("host", "sensors", "outlets"),
                          fault=Fault("PC-PDU-OUTLETS", "wire the outlets",
                                      Actor.PROVIDER_HARDWARE))
    monkeypatch.setattr(clauses, "CLAUSES", (*clauses.CLAUSES, outlets))
    monkeypatch.setattr(clauses, "_BY_ID", {**clauses._BY_ID, outlets.id: outlets})
    sections = (*registry.SECTIONS, registry.Section("pdu", probes=("host",), checked=True))
    monkeypatch.setattr(loader, "SECTIONS", sections)
    monkeypatch.setattr(loader, "LISTED", tuple(s.name for s in sections))

    spec = parse_spec("cluster: {name: c, nodes: [a, b]}\npdu:\n  outlets: '>= 2'\n", "t.yaml")
    record = spec.section("pdu")
    assert isinstance(record, SectionSpec) and spec.others == (record,)
    found = record.clause("outlets")
    assert found is not None and found.key == "pdu.outlets" and found.line == 3
    assert found.requirement.text == ">= 2"
    assert promised(spec, "pdu.outlets", {"node": "a"}).promised
    alone = parse_spec("cluster: {name: c, nodes: [a]}\npdu: {outlets: 1}\n", "t.yaml")
    assert alone.section("pdu") is not None  # a checked section alone is something to test
    left_out = parse_spec("cluster: {name: c, nodes: [a]}\nhost: {cpu_cores: 1}\n", "t.yaml")
    assert left_out.section("pdu") is None and left_out.others == ()
    assert promised(left_out, "pdu.outlets", {"node": "a"}).not_in_contract == "pdu"
    with pytest.raises(SpecError) as caught:
        parse_spec("cluster: {name: c, nodes: [a]}\npdu: {outelts: 2}\n", "t.yaml")
    assert "t.yaml:2: pdu.outelts: unknown key" in str(caught.value)
    assert "did you mean 'outlets'" in str(caught.value)


@pytest.mark.parametrize(("text", "message"), [
    ('cluster: {name: "a\x1bb", nodes: a}\n',
     "trial.yaml:1: YAML error: the character U+001B is not allowed in YAML; write it as an "
     'escape inside double quotes ("\\e" for ESC) or leave it out'),
    ("cluster: {name: a, nodes: a}\nhost: {cpu_cores: 1}\n# \x01\n",
     "trial.yaml:3: YAML error: the character U+0001 is not allowed in YAML; write it as an "
     'escape inside double quotes ("\\e" for ESC) or leave it out'),
])
def test_a_character_yaml_refuses_is_named_at_its_line(text: str, message: str) -> None:
    """Written raw (an ESC pasted in), not as an escape: the line and the code point, not
    PyYAML's position in '<unicode string>'."""
    assert error_of(text) == message

"""Slips a tester found in specs: each is refused with one exact message, accepted with its
defaults, or accepted with an exact warning on Spec.warnings."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_cluster.contract import load_spec, parse_spec
from pytest_cluster.contract.clauses import CLAUSES, keys
from pytest_cluster.contract.declaration import Declaration
from pytest_cluster.contract.launchers import KINDS
from pytest_cluster.contract.model import Spec
from pytest_cluster.contract.sections import LISTED
from tests.contract.test_loader import error_of as spec_error

SIM_BASE = "cluster: {name: x, nodes: 'n[1-2]', launcher: sim}\ngpus: {count: 8}\n"
#: The spec's sections and launchers, as the registries (extensions' included) list them.
TOP_KEYS = ", ".join(LISTED)
LAUNCHERS = ", ".join(KINDS)


def said(spec: Spec) -> tuple[str, ...]:
    """The spec's warnings as the terminal and results.jsonl say them."""
    return tuple(map(str, spec.warnings))


def error_of(text: str) -> str:
    return spec_error(text, "t.yaml")


@pytest.mark.parametrize(("written", "bound"), [
    ("2.10", ">= 2.10"), ("6.10", ">= 6.10"), ("12", ">= 12"), ("'== 2.10'", "== 2.10")])
def test_a_version_written_unquoted_is_the_version_written(written: str, bound: str) -> None:
    """YAML reads 2.10 as the float 2.1: a node with torch 2.1 passed a contract that
    says 2.10. A version bound is the text as written, quoted or not."""
    spec = parse_spec("cluster: {name: x, nodes: [a]}\nhost:\n  software: {torch: "
                      f"{written}, kernel: {written}}}\n", "t.yaml")
    assert {c.name: c.requirement.text for c in spec.host.software} == {
        "torch": bound, "kernel": bound}


@pytest.mark.parametrize("written", ["111.99999999999999999", "8.0000000000000001"])
def test_a_number_with_more_digits_than_are_read_is_refused_quoted_or_not(
        written: str) -> None:
    """Unquoted, YAML's float rounded it (cpu_cores 111.99999999999999999 was '>= 112.0');
    it is refused as the quoted one is, each echoed as written (quoted or not)."""
    for shown in (written, f"'{written}'"):
        assert error_of(f"cluster: {{name: x, nodes: [a]}}\nhost: {{cpu_cores: {shown}}}\n") \
            == (f"t.yaml:2: host.cpu_cores: expected a count like 192, got {shown} (more "
                "than 15 significant digits: a number of the spec is read exactly up to 15)")


def test_a_text_written_like_a_number_is_the_text_written() -> None:
    """YAML reads `name: 1.10` as the number 1.1 (refused as 'got 1.1'), a firmware
    version 28.40 as 28.4: a field of text takes them as written."""
    spec = parse_spec("cluster: {name: 1.10, nodes: [a], launcher: sim}\nhost: {cpu_cores: 1}"
                      "\nsim: {faults: [{node: a, nic: 1, nic_firmware: 28.40}]}\n", "t.yaml")
    assert spec.sim is not None
    assert (spec.cluster.name, spec.sim.faults[0].nic_firmware) == ("1.10", "28.40")
    assert parse_spec("cluster: {name: 2024, nodes: [a]}\nhost: {cpu_cores: 1}\n",
                      "t.yaml").cluster.name == "2024"


INTERCONNECT = ("cluster: {name: x, nodes: 'n[1-2]'}\ngpus: {count: 8}\ninterconnect:\n"
                "  busbw: '>= 100 GB/s'\n  payloads: [4 GiB]\n  ranks_per_node: 16\n")


def test_more_nccl_ranks_than_gpus_is_refused_at_load_time() -> None:
    assert error_of(INTERCONNECT) == (
        "t.yaml:6: interconnect.ranks_per_node: 16 ranks per node, but gpus.count is 8: "
        "NCCL needs a GPU per rank; set ranks_per_node to 8 or less (or backend: gloo for "
        "ranks on CPUs)")


def test_more_gloo_ranks_than_gpus_is_accepted() -> None:
    spec = parse_spec(INTERCONNECT + "  backend: gloo\n", "t.yaml")
    assert spec.interconnect is not None and spec.interconnect.ranks_per_node == 16


def test_an_empty_sim_section_still_needs_the_sim_launcher() -> None:
    text = "cluster: {name: x, nodes: a}\ngpus: {count: 1}\nsim:\n"
    assert error_of(text) == ("t.yaml:3: sim: only used with launcher: sim (the launcher is "
                              "'local')")


@pytest.mark.parametrize(("text", "message"), [
    ("cluster: {name: x, nodes: a}\nGPUs: {count: 8}\n",
     f"t.yaml:2: GPUs: unknown key; did you mean 'gpus'? (known keys: {TOP_KEYS})"),
    ("cluster: {name: x, nodes: a}\nHost: {cpu_cores: 8}\n",
     f"t.yaml:2: Host: unknown key; did you mean 'host'? (known keys: {TOP_KEYS})"),
    ("cluster: {name: x, nodes: a}\nhost: {CPU_Cores: 8}\n",
     "t.yaml:2: host.CPU_Cores: unknown key; did you mean 'cpu_cores'? (known keys: "
     f"{', '.join(keys('host'))})"),
    ("cluster: {name: x, nodes: a}\ngpus: {count: 8, matmul: {BF16: '>= 1 TFLOPS'}}\n",
     "t.yaml:2: gpus.matmul.BF16: unknown key; did you mean 'bf16'? (known keys: bf16, fp16, "
     "tf32, fp32, fp8)"),
    ("cluster: {name: x, nodes: a}\ngpus: {count: 8, model: h100-sxm}\n",
     "t.yaml:2: gpus.model: unknown GPU model 'h100-sxm'; did you mean 'H100-SXM-80GB'? "
     "known: H100-SXM-80GB, H100-PCIe-80GB, H100-NVL-94GB, H200-SXM-141GB, B200-SXM-180GB, "
     "A100-SXM4-80GB, A100-SXM4-40GB, A100-PCIe-80GB"),
])
def test_did_you_mean_ignores_case(text: str, message: str) -> None:
    assert error_of(text) == message


@pytest.mark.parametrize(("text", "message"), [
    ("cluster: {name: x, nodes: a, launcher: simm}\nhost: {cpu_cores: 1}\n",
     f"t.yaml:1: cluster.launcher: expected one of {LAUNCHERS}, got 'simm'; did you "
     "mean 'sim'?"),
    ("cluster: {name: x, nodes: a}\nhost: {cpu_cores: '=> 700'}\n",
     "t.yaml:2: host.cpu_cores: expected a count like 192, got '=> 700'; did you mean "
     "'>= 700'?"),
    ("cluster: {name: x, nodes: a}\nstorage: [{path: /data, write: '=< 2 GB/s'}]\n",
     "t.yaml:2: storage[/data].write: expected a rate like '10 GB/s', got '=< 2 GB/s'; did you "
     "mean '<= 2 GB/s'?"),
    ("cluster: {name: x, nodes: a}\nhost: {cpu_cores: 1}\ns\u043ba: {uptime: 99%}\n",
     "t.yaml:3: <key not shown>: unknown key; did you mean 'sla'? It is written with U+043B "
     "CYRILLIC SMALL LETTER EL at position 2"),
    ("cluster: {name: x, nodes: a}\nh\u043est: {cpu_cores: 1}\n",
     "t.yaml:2: <key not shown>: unknown key; did you mean 'host'? It is written with U+043E "
     "CYRILLIC SMALL LETTER O at position 2"),
    ("cluster: {name: x, nodes: a, launcher: s\u0456m}\nhost: {cpu_cores: 1}\n",
     f"t.yaml:1: cluster.launcher: expected one of {LAUNCHERS}, got 's\u0456m' "
     "(written with U+0456 CYRILLIC SMALL LETTER BYELORUSSIAN-UKRAINIAN I at position 2); "
     "did you mean 'sim'?"),
    ("cluster: {name: x, nodes: a}\ngpus: {count: 8, model: H1\u041e0}\n",
     "t.yaml:2: gpus.model: unknown GPU model 'H1\u041e0' (written with U+041E CYRILLIC "
     "CAPITAL LETTER O at position 3); known: H100-SXM-80GB, H100-PCIe-80GB, H100-NVL-94GB, "
     "H200-SXM-141GB, B200-SXM-180GB, A100-SXM4-80GB, A100-SXM4-40GB, A100-PCIe-80GB"),
    ("cluster: {name: x, nodes: a}\nhost: {cpu_cores: 1}\n\u00fcnknown: 3\n",
     "t.yaml:3: <key not shown>: unknown key, not a plain name (not shown: is this file a "
     f"spec? known keys: {TOP_KEYS})"),
])
def test_slips_of_a_comparison_a_launcher_or_a_lookalike_letter_get_a_did_you_mean(
        text: str, message: str) -> None:
    assert error_of(text) == message


def test_an_unknown_launcher_is_one_error_not_a_second_about_its_section() -> None:
    """`launcher: simm` with a sim: section: the launcher is named, and sim: is not
    called out as 'only used with launcher: sim (the launcher is local)'."""
    assert error_of("cluster: {name: x, nodes: a, launcher: simm}\ngpus: {count: 8}\nsim: {}\n"
                    ) == (f"t.yaml:1: cluster.launcher: expected one of {LAUNCHERS}, "
                          "got 'simm'; did you mean 'sim'?")


NETWORK = ("cluster: {name: x, nodes: 'n[1-2]'}\ninterconnect:\n  busbw: '>= 80%'\n"
           "  payloads: [4 GiB]\n  ranks_per_node: 2\n"
           "  intra_node: {kind: nvlink, rate: 450 GB/s}\n"
           "  inter_node: {kind: infiniband, nics_per_node: 8, rate_per_nic: RATE}\n")
H100 = "cluster: {name: x, nodes: a}\ngpus:\n  count: 8\n  model: H100-SXM-80GB\n  memory: MEM\n"


@pytest.mark.parametrize(("text", "warnings"), [
    (NETWORK.replace("RATE", "400 GB/s"),
     ("t.yaml:7: interconnect.inter_node.rate_per_nic: 400 GB/s is 3.2 Tb/s per NIC, faster "
      "than any NIC (1.6 Tb/s at most); did you mean 400 Gb/s?",)),
    (NETWORK.replace("RATE", "3.2 Tb/s"),
     ("t.yaml:7: interconnect.inter_node.rate_per_nic: 3.2 Tb/s is 3.2 Tb/s per NIC, faster "
      "than any NIC (1.6 Tb/s at most)",)),
    (NETWORK.replace("RATE", "400 Gb/s"), ()),
    (NETWORK.replace("RATE", "200 GB/s"), ()),
    (H100.replace("MEM", "'>= 80 GiB'"),
     ("t.yaml:5: gpus.memory: '>= 80 GiB' is more than the H100-SXM-80GB's total memory "
      "(79.65 GiB as NVML reports it): every GPU would fail it; did you mean '>= 80 GB'?",)),
    (H100.replace("MEM", "'>= 90 GB'"),
     ("t.yaml:5: gpus.memory: '>= 90 GB' is more than the H100-SXM-80GB's total memory "
      "(79.65 GiB as NVML reports it): every GPU would fail it",)),
    (H100.replace("MEM", "'>= 80 GB'"), ()),
    (H100.replace("MEM", "'>= 79 GiB'"), ()),
    (H100.replace("MEM", "'<= 100 GiB'"), ()),
    (H100.replace("memory: MEM", "matmul: {bf16: '>= 70000 TFLOPS', fp8: '>= 1400 TFLOPS'}"),
     ("t.yaml:5: gpus.matmul.bf16: '>= 70000 TFLOPS' is above the H100-SXM-80GB's datasheet "
      "dense bf16 peak 989.5 TFLOPS: every GPU would fail it; check the unit and the number",)),
    (H100.replace("  model: H100-SXM-80GB\n", "").replace("memory: MEM", "matmul: {bf16: "
                                                           "'>= 3 PFLOPS'}"),
     ("t.yaml:4: gpus.matmul.bf16: '>= 3 PFLOPS' is above every known GPU's datasheet dense "
      "bf16 peak (the highest: B200-SXM-180GB's 2250 TFLOPS): every GPU would fail it; check "
      "the unit and the number",)),
    (H100.replace("memory: MEM", "matmul: {bf16: '>= 800 TFLOPS'}"), ()),
])
def test_likely_slips_are_warned_not_refused(text: str, warnings: tuple[str, ...]) -> None:
    assert said(parse_spec(text, "t.yaml")) == warnings


#: Where each section takes a link rate (RATE), and the name it is warned by: a section
#: whose declarations gain one (`link=True`) needs a line here, or the test below fails.
LINK_RATE_AT = {
    "interconnect.inter_node.rate_per_nic": (NETWORK, 7, "interconnect.inter_node.rate_per_nic"),
    "fabric.rate": ("cluster: {name: x, nodes: 'n[1-2]'}\nfabric:\n  rate: RATE\n", 3,
                    "fabric.rate"),
    "sim.faults.nic_rate": (SIM_BASE + "sim:\n  faults:\n    - {node: n1, nic: 0, "
                            "nic_rate: RATE}\n", 5, "sim.faults[0].nic_rate"),
}


@pytest.mark.parametrize("declaration", [d for d in CLAUSES if d.link],
                         ids=[d.id for d in CLAUSES if d.link])
def test_every_link_rate_in_bytes_faster_than_any_nic_is_warned(
        declaration: Declaration) -> None:
    """Every NIC or link rate the declarations name (`link`), written in bytes where the
    world states bits, gets the one warning (fabric.rate: 400 GB/s passed unwarned, while
    interconnect.inter_node.rate_per_nic warned); the same rate in bits does not."""
    text, line, name = LINK_RATE_AT[declaration.id]
    assert said(parse_spec(text.replace("RATE", "400 GB/s"), "t.yaml")) == (
        f"t.yaml:{line}: {name}: 400 GB/s is 3.2 Tb/s per NIC, faster than any NIC (1.6 "
        "Tb/s at most); did you mean 400 Gb/s?",)
    assert parse_spec(text.replace("RATE", "400 Gb/s"), "t.yaml").warnings == ()
    assert {"fabric.rate", "interconnect.inter_node.rate_per_nic"} <= {
        d.id for d in CLAUSES if d.link}


def test_load_spec_fills_the_warnings(tmp_path: Path) -> None:
    path = tmp_path / "trial.yaml"
    path.write_text(NETWORK.replace("RATE", "400 GB/s") + H100.split("\n", 1)[1].replace(
        "MEM", "'>= 80 GiB'"), encoding="utf-8")
    spec = load_spec(path)
    assert said(spec) == (
        f"{path}:7: interconnect.inter_node.rate_per_nic: 400 GB/s is 3.2 Tb/s per NIC, "
        "faster than any NIC (1.6 Tb/s at most); did you mean 400 Gb/s?",
        f"{path}:11: gpus.memory: '>= 80 GiB' is more than the H100-SXM-80GB's total memory "
        "(79.65 GiB as NVML reports it): every GPU would fail it; did you mean '>= 80 GB'?")
    # kept as parts: what pytest's summary places at the spec's line, never read back
    # from the text (a file name with ': 7: ' in it would move it)
    first = spec.warnings[0]
    assert (first.file, first.line, first.path) == (str(path), 7,
                                                    "interconnect.inter_node.rate_per_nic")
    assert first.said == f"{first.path}: {first.detail}"


def test_the_examples_have_no_warnings() -> None:
    for path in sorted(Path(__file__).parents[2].joinpath("examples").glob("*.yaml")):
        assert load_spec(path).warnings == (), path


NOT_DECIMAL = "(not a decimal number: write it without a leading 0, 0x, '_' or ':')"
HOST = "cluster: {name: x, nodes: a}\nhost: {cpu_cores: VALUE}\n"


@pytest.mark.parametrize(("written", "shown"), [
    ("010", "010"), ("0x70", "0x70"), ("0o10", "0o10"), ("1:52", "1:52"), ("1_000", "1_000"),
    ("'>= 010'", ">= 010"), ("!!int 0x70", "0x70"), ("!!int 010", "010"),
])
def test_a_count_yaml_1_1_read_as_another_number_is_refused_as_written(
        written: str, shown: str) -> None:
    """YAML 1.1 read 010 as 8 (a run required '>= 8' and passed), 1:52 and 0x70 as 112 and
    1_000 as 1000: the spec is read by YAML 1.2's core schema, so each is the text written
    and the count refuses it, naming it as written (an explicit !!int too)."""
    assert error_of(HOST.replace("VALUE", written)) == (
        f"t.yaml:2: host.cpu_cores: expected a count like 192, got '{shown}' {NOT_DECIMAL}")


@pytest.mark.parametrize("written", ["1:30", "!!float 1:30"])
def test_a_time_written_as_minutes_and_seconds_is_refused_as_written(written: str) -> None:
    """YAML 1.1 read 1:30 as 90 and refused it as 'got 90 (a number needs a unit)', a
    number the user never wrote."""
    text = f"cluster: {{name: x, nodes: a, probe_timeout: {written}}}\nhost: {{cpu_cores: 1}}\n"
    assert error_of(text) == (f"t.yaml:1: cluster.probe_timeout: expected a time like '5 s', "
                              f"got '1:30' {NOT_DECIMAL}")


def test_a_whole_number_with_a_leading_zero_is_refused_as_written() -> None:
    text = "cluster: {name: x, nodes: a, parallel: 010}\nhost: {cpu_cores: 1}\n"
    assert error_of(text) == (f"t.yaml:1: cluster.parallel: expected a whole number >= 1, "
                              f"got '010' {NOT_DECIMAL}")


@pytest.mark.parametrize("written", [".inf", "-.Inf", ".NaN"])
def test_an_infinity_or_nan_is_still_refused(written: str) -> None:
    """Refused, and echoed as written (it was Python's 'inf', '-inf', 'nan')."""
    assert error_of(HOST.replace("VALUE", written)) == (
        f"t.yaml:2: host.cpu_cores: expected a count like 192, got {written}")


@pytest.mark.parametrize(("written", "value"), [("8", 8.0), ("+8", 8.0), ("0", 0.0),
                                                ("1e3", 1000.0), ("8.0", 8.0)])
def test_a_decimal_number_is_read_as_written(written: str, value: float) -> None:
    cores = parse_spec(HOST.replace("VALUE", written), "t.yaml").host.clause("cpu_cores")
    assert cores is not None
    assert cores.requirement.bound.value == value


FLAG = "cluster: {name: x, nodes: a}\nstorage: [{path: /d, shared: VALUE, write: 1 GB/s}]\n"


@pytest.mark.parametrize("written", ["yes", "no", "on", "off", "Yes", "OFF", "y", "!!bool yes"])
def test_a_flag_is_true_or_false_and_not_yaml_1_1_words(written: str) -> None:
    shown = written.removeprefix("!!bool ")
    assert error_of(FLAG.replace("VALUE", written)) == (
        f"t.yaml:2: storage[/d].shared: expected true or false, got '{shown}'")


@pytest.mark.parametrize(("written", "value"), [
    ("true", True), ("True", True), ("TRUE", True), ("false", False), ("False", False),
    ("FALSE", False),
])
def test_a_flag_takes_every_spelling_yaml_1_2_has(written: str, value: bool) -> None:
    assert parse_spec(FLAG.replace("VALUE", written), "t.yaml").storage[0].shared is value


@pytest.mark.parametrize("written", ["~", "null", "Null", "NULL", ""])
def test_a_key_without_a_value_is_absent_in_every_null_spelling(written: str) -> None:
    spec = parse_spec(FLAG.replace("VALUE", written), "t.yaml")
    assert spec.storage[0].shared is False


def test_words_and_numbers_yaml_1_1_typed_are_names_as_written() -> None:
    """`nodes: [no, yes]` was refused as 'got False/True'; a name of digits and colons is
    the name written, not a number (1:30 as 90)."""
    spec = parse_spec("cluster: {name: 1:30, nodes: [no, yes, on, off, 0x70, 010]}\n"
                      "host: {cpu_cores: 1}\n", "t.yaml")
    assert spec.cluster.name == "1:30"
    assert spec.cluster.nodes == ("no", "yes", "on", "off", "0x70", "010")


@pytest.mark.parametrize(("written", "named"), [
    ("\uff11", "U+FF11 FULLWIDTH DIGIT ONE"),
    ("\u0661", "U+0661 ARABIC-INDIC DIGIT ONE"),
    ("\u0967.5", "U+0967 DEVANAGARI DIGIT ONE"),
])
def test_a_quantity_with_digits_other_than_0_to_9_is_refused(written: str, named: str) -> None:
    """'>= \uff11 TiB' (a full-width 1) was read as 1 TiB: float() reads every script's
    digits."""
    text = f"cluster: {{name: x, nodes: a}}\nhost: {{memory: '>= {written} TiB'}}\n"
    assert error_of(text) == (f"t.yaml:2: host.memory: expected a size like '1.5 TiB', got "
                              f"'>= {written} TiB' (written with {named}: a number's digits "
                              "are 0-9)")


FULL = "\uff11\uff12"  # a full-width 1 and 2
WRITTEN = " (written with U+FF11 FULLWIDTH DIGIT ONE, U+FF12 FULLWIDTH DIGIT TWO: a number's " \
          "digits are 0-9)"


@pytest.mark.parametrize(("text", "message"), [
    ("cluster: {name: x, nodes: 'n[\uff11-\uff12]'}\nhost: {cpu_cores: 1}\n",
     "t.yaml:1: cluster.nodes: bad range '\uff11-\uff12' in hostlist 'n[\uff11-\uff12]' "
     "(expected like 001-004)"),
    (f"cluster: {{name: x, nodes: a}}\nhost: {{software: {{kernel: '>= {FULL}.15'}}}}\n",
     "t.yaml:2: host.software.kernel: expected a version bound like '>= 5.15', got "
     f"'>= {FULL}.15'{WRITTEN}"),
    (f"cluster: {{name: x, nodes: a, launcher: ssh}}\nhost: {{cpu_cores: 1}}\n"
     f"ssh: {{options: {{ConnectionAttempts: '{FULL}'}}}}\n",
     f"t.yaml:3: ssh.options.ConnectionAttempts: expected a whole number from 1 to 10, got "
     f"'{FULL}'{WRITTEN}"),
    (f"cluster: {{name: x, nodes: a}}\nhost: {{cpu_cores: 1}}\nsla: {{uptime: 99%, "
     f"price_per_node_hour: '{FULL}.49', credits: [{{below: 99%, credit: 10%}}]}}\n",
     "t.yaml:3: sla.price_per_node_hour: expected a price written in plain digits like 2.49 "
     f"(no sign, no exponent, no separator, no leading 0), got '{FULL}.49'{WRITTEN}"),
])
def test_every_number_of_the_spec_is_written_with_the_digits_0_to_9(text: str,
                                                                     message: str) -> None:
    """A hostlist's range, a version bound, an ssh option's number and a price read other
    scripts' digits as theirs (int() and Decimal() do): n[\uff11-\uff12] was n1 and n2."""
    assert error_of(text) == message


# -- a value echoed as written, a byte count whole (issue 48) ------------------------------

LATENCY = ("cluster: {name: x, nodes: 'n[1-2]', launcher: sim}\ngpus: {count: 8}\n"
           "sim: {gpus_per_node: 8}\ninterconnect:\n  busbw: '>= 10 GB/s'\n"
           "  payloads: [4 GiB]\n  latency: '<= 5 us'\n  latency_size: VALUE\n")


@pytest.mark.parametrize(("text", "message"), [
    (LATENCY.replace("VALUE", "3.5 B"),
     "t.yaml:8: interconnect.latency_size: expected a whole number of bytes like '4 KiB', got "
     "'3.5 B' (that is 3.5 B: a byte count has no fraction)"),
    ("cluster: {name: x, nodes: a}\nstorage:\n  - {path: /d, dataloader: {read: '>= 1 GB/s', "
     "read_size: 4096.5 B}}\n",  # int() made it 4096, whole sectors: it passed
     "t.yaml:3: storage[/d].dataloader.read_size: expected a whole number of bytes like "
     "'4 KiB', got '4096.5 B' (that is 4096.5 B: a byte count has no fraction)"),
    ("cluster: {name: x, nodes: a, launcher: sim}\nsim: {memory: 1.0000000001 TiB}\n",
     "t.yaml:2: sim.memory: expected a whole number of bytes like '4 KiB', got "
     "'1.0000000001 TiB' (that is 1099511627885.95 B: a byte count has no fraction)"),
    ("cluster: {name: x, nodes: 'n[1-2]'}\ninterconnect:\n  busbw: '>= 10 GB/s'\n"
     "  payloads: [4.5 KB, 1.0000005 MB]\n",
     "t.yaml:4: interconnect.payloads[1]: expected a whole number of bytes like '4 KiB', got "
     "'1.0000005 MB' (that is 1000000.5 B: a byte count has no fraction)"),
])
def test_a_byte_count_with_a_fraction_is_refused_naming_its_key(text: str,
                                                                 message: str) -> None:
    """`latency_size: 3.5 B` was the ping-pong's 3 B, a payload of 4.5 KB one of 4500 B
    (it was the int() of the value): every size that counts bytes is whole as written."""
    assert message in error_of(text).splitlines()[-1], error_of(text)


def test_a_whole_byte_count_written_with_a_fraction_is_kept() -> None:
    spec = parse_spec(LATENCY.replace("VALUE", "0.5 KiB"), "t.yaml")
    assert spec.interconnect is not None and spec.interconnect.latency_size == 512


@pytest.mark.parametrize(("text", "message"), [
    ("cluster: {name: x, nodes: 'n[1-2]'}\ninterconnect:\n  busbw: '>= 80%'\n"
     "  payloads: [4 GiB]\n  ranks_per_node: 1\n  inter_node: {kind: infiniband, "
     "nics_per_node: 1e3, rate_per_nic: 400 Gb/s}\n",
     "t.yaml:6: interconnect.inter_node.nics_per_node: expected a whole number from 1 to 64, "
     "got 1e3"),
    ("cluster: {name: x, nodes: a, launcher: sim}\nsim: {gpus_per_node: 1E+2}\n",
     "t.yaml:2: sim.gpus_per_node: expected a whole number from 1 to 64, got 1E+2"),
    (HOST.replace("VALUE", "1e30"),
     "t.yaml:2: host.cpu_cores: expected a count like 192, got 1e30 (too large: a number of "
     "the spec is below 1e15)"),
    (HOST.replace("VALUE", "-1.50e2"),
     "t.yaml:2: host.cpu_cores: expected a count like 192, got -1.50e2 (a count cannot be "
     "negative)"),
    (HOST.replace("VALUE", "+2.5"),
     "t.yaml:2: host.cpu_cores: expected a count like 192, got +2.5 (a count is a whole "
     "number)"),
])
def test_a_number_is_echoed_as_the_spec_wrote_it(text: str, message: str) -> None:
    """The parsers echo what YAML read: `1e3` was 'got 1000.0', `1e30` 'got 1e+30',
    `+2.5` 'got 2.5'; the error quotes the spec's own text."""
    assert error_of(text).splitlines()[-1].strip() == message, error_of(text)


@pytest.mark.parametrize("written", ["9" * 4000, "1." + "9" * 4000, "'" + "9" * 4000 + "'",
                                     "'>= " + "9" * 4000 + "'"])
def test_a_value_of_thousands_of_characters_is_echoed_cut_saying_so(written: str) -> None:
    """A 4,000-digit value was a 1,000-character line of digits (its middle cut, the end
    still digits); it is echoed in its first 100 characters and says how long it was."""
    message = error_of(HOST.replace("VALUE", written))
    value = written.strip("'")
    assert message.startswith("t.yaml:2: host.cpu_cores: expected a count like 192, got ")
    assert f"{value[:100]}... ({len(value)} characters)" in message, message
    assert len(message) < 300 and "\n" not in message

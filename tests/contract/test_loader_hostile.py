"""Hostile or absurd specs (issue 11, item 7): each is refused as a usage error with one
exact, bounded message; never an INTERNALERROR, a hang or gigabytes of output. How long
each takes (the aim: within a second) is timed by bench/hostile_specs.py."""

from __future__ import annotations

import os
import resource
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_cluster.contract import load_spec, parse_spec
from pytest_cluster.errors import MAX_LINE, SpecError
from tests.contract.test_loader import error_of as spec_error

ALLOWED = ("AddressFamily, CASignatureAlgorithms, CertificateFile, CheckHostIP, Ciphers, "
           "Compression, ConnectionAttempts, GlobalKnownHostsFile, GSSAPIAuthentication, "
           "HashKnownHosts, HostKeyAlgorithms, HostKeyAlias, HostName, IdentitiesOnly, "
           "IdentityAgent, IPQoS, KbdInteractiveAuthentication, KexAlgorithms, LogLevel, MACs, "
           "NumberOfPasswordPrompts, PasswordAuthentication, PreferredAuthentications, "
           "ProxyJump, PubkeyAcceptedAlgorithms, PubkeyAuthentication, RekeyLimit, "
           "StrictHostKeyChecking, TCPKeepAlive, UpdateHostKeys, UserKnownHostsFile, "
           "VerifyHostKeyDNS")
BASE = "cluster: {name: x, nodes: a}\nhost: {cpu_cores: 1}\n"
SSH = "cluster: {name: x, nodes: 'n[1-2]', launcher: ssh}\nhost: {cpu_cores: 1}\nssh:\n"


def error_of(text: str) -> str:
    return spec_error(text, "t.yaml")


# -- ssh options: an allowlist -----------------------------------------------------------

@pytest.mark.parametrize("option", [
    "KnownHostsCommand: '/bin/touch /tmp/owned'", "KnownHostsCommand: /bin/true",
    "PKCS11Provider: /tmp/evil.so", "SecurityKeyProvider: /tmp/evil.so",
    "ProxyCommand: 'nc %h %p'", "LocalCommand: id", "PermitLocalCommand: yes",
    "RemoteCommand: id", "ProxyUseFdpass: yes", "Include: /tmp/cfg", "Match: 'exec true'",
    "proxycommand: x",
])
def test_ssh_options_that_run_code_are_refused(option: str) -> None:
    key = option.split(":", maxsplit=1)[0]
    assert error_of(SSH + f"  options: {{{option}}}\n") == (
        f"t.yaml:4: ssh.options.{key}: not on the allowlist of ssh options: it runs a "
        f"command or loads code on this machine; allowed: {ALLOWED}")


@pytest.mark.parametrize(("option", "reason"), [
    ("ControlPath: /tmp/%C", "the launcher sets it itself, and ssh keeps the first value given"),
    ("ServerAliveInterval: 5", "the launcher sets it itself, and ssh keeps the first value "
                               "given"),
    ("BatchMode: no", "the launcher sets it itself, and ssh keeps the first value given"),
    ("RequestTTY: force", "the launcher sets it itself, and ssh keeps the first value given"),
    ("ForwardAgent: yes", "it hands the nodes your credentials or environment"),
    ("GSSAPIDelegateCredentials: yes", "it hands the nodes your credentials or environment"),
    ("SetEnv: LD_PRELOAD=/tmp/x.so", "it hands the nodes your credentials or environment"),
    ("SendEnv: AWS_SECRET_ACCESS_KEY", "it hands the nodes your credentials or environment"),
    ("ConnectTimeout: 3", "use ssh.connect_timeout"),
    ("IdentityFile: ~/.ssh/id", "use ssh.identity_file"),
    ("StrictHostKeyCheking: no", "did you mean 'StrictHostKeyChecking'?"),
])
def test_other_options_off_the_allowlist_say_why(option: str, reason: str) -> None:
    key = option.split(":", maxsplit=1)[0]
    assert error_of(SSH + f"  options: {{{option}}}\n") == (
        f"t.yaml:4: ssh.options.{key}: not on the allowlist of ssh options: {reason}; "
        f"allowed: {ALLOWED}")


def test_an_unknown_option_lists_what_is_allowed() -> None:
    assert error_of(SSH + "  options: {Tunnel: yes}\n") == (
        f"t.yaml:4: ssh.options.Tunnel: not on the allowlist of ssh options; allowed: {ALLOWED}")


@pytest.mark.parametrize(("option", "message"), [
    ("StrictHostKeyChecking: maybe", "expected one of yes, no, accept-new, off, ask, got 'maybe'"),
    ("IdentitiesOnly: 1", "expected yes or no, got '1'"),
    ("ConnectionAttempts: 1000", "expected a whole number from 1 to 10, got '1000'"),
    ("ConnectionAttempts: many", "expected a whole number from 1 to 10, got 'many'"),
    ("ProxyJump: -oProxyCommand=id", "expected jump hosts like user@bastion:22,gw2 (host "
                                     "names, an optional user and port), got "
                                     "'-oProxyCommand=id'"),
    ("ProxyJump: 'gw:99999'", "expected jump hosts like user@bastion:22,gw2 (host names, an "
                              "optional user and port), got 'gw:99999'"),
    ("HostName: gpu-001", "expected a name made from the node's, like %h.ib.cluster (without "
                          "%h every node would be the same host), got 'gpu-001'"),
    ("UserKnownHostsFile: -oX", "expected a file path like ~/.ssh/known_hosts, or none, got "
                                "'-oX'"),
    ("PreferredAuthentications: 'publickey,magic'", "expected a comma-separated list of "
     "gssapi-with-mic, hostbased, publickey, keyboard-interactive, password, got "
     "'publickey,magic'"),
    ("Ciphers: 'aes;id'", "expected a list of algorithm names like "
                          "aes256-gcm@openssh.com,aes128-ctr, got 'aes;id'"),
    ("LogLevel: LOUD", "expected one of QUIET, FATAL, ERROR, INFO, VERBOSE, DEBUG, DEBUG1, "
                       "DEBUG2, DEBUG3, got 'LOUD'"),
    ("IPQoS: 'x#y'", "expected one word (no blanks or quotes), got 'x#y'"),
])
def test_allowed_options_have_their_values_checked(option: str, message: str) -> None:
    key = option.split(":", maxsplit=1)[0]
    assert error_of(SSH + f"  options: {{{option}}}\n") == f"t.yaml:4: ssh.options.{key}: {message}"


def test_allowed_options_pass_as_written_and_once() -> None:
    spec = parse_spec(SSH + "  options:\n    StrictHostKeyChecking: accept-new\n"
                      "    UserKnownHostsFile: /dev/null\n    ProxyJump: me@bastion:2222,gw\n"
                      "    HostName: '%h.ib'\n    Ciphers: '-aes128-cbc'\n    IPQoS: af21\n"
                      "    Compression: yes\n    ConnectionAttempts: 3\n", "t.yaml")
    assert spec.ssh is not None
    assert spec.ssh.options == (
        ("StrictHostKeyChecking", "accept-new"), ("UserKnownHostsFile", "/dev/null"),
        ("ProxyJump", "me@bastion:2222,gw"), ("HostName", "%h.ib"), ("Ciphers", "-aes128-cbc"),
        ("IPQoS", "af21"), ("Compression", "yes"), ("ConnectionAttempts", "3"))
    assert error_of(SSH + "  options: {IdentitiesOnly: yes, identitiesonly: no}\n") == (
        "t.yaml:4: ssh.options.identitiesonly: given twice (as IdentitiesOnly before; ssh "
        "option names ignore case)")


# -- numbers: one rule for every quantity, no 0 turned into a default ----------------------

NETWORK = ("cluster: {name: x, nodes: 'n[1-2]'}\ninterconnect:\n  busbw: '>= 80%'\n"
           "  payloads: [4 GiB]\n  ranks_per_node: 1\n"
           "  inter_node: {kind: infiniband, nics_per_node: NICS, rate_per_nic: 400 Gb/s}\n")


@pytest.mark.parametrize(("text", "message"), [
    ("cluster: {name: x, nodes: a, probe_timeout: -5 s}\nhost: {cpu_cores: 1}\n",
     "t.yaml:1: cluster.probe_timeout: expected a time like '5 s', got '-5 s' (a time cannot "
     "be negative)"),
    ("cluster: {name: x, nodes: a, probe_timeout: 0 s}\nhost: {cpu_cores: 1}\n",
     "t.yaml:1: cluster.probe_timeout: expected a time from 1 s to 24 h, got '0 s'"),
    ("cluster: {name: x, nodes: a}\nhost: {memory: '>= -5 GiB'}\n",
     "t.yaml:2: host.memory: expected a size like '1.5 TiB', got '>= -5 GiB' (a size cannot "
     "be negative)"),
    ("cluster: {name: x, nodes: a}\nhost: {cpu_cores: -3}\n",
     "t.yaml:2: host.cpu_cores: expected a count like 192, got -3 (a count cannot be "
     "negative)"),
    ("cluster: {name: x, nodes: a}\nhost: {cpu_threads: '>= -3'}\n",
     "t.yaml:2: host.cpu_threads: expected a count like 192, got '>= -3' (a count cannot be "
     "negative)"),
    ("cluster: {name: x, nodes: a}\nhost: {cpu_cores: 1.5}\n",
     "t.yaml:2: host.cpu_cores: expected a count like 192, got 1.5 (a count is a whole "
     "number)"),
    ("cluster: {name: x, nodes: a}\nstorage:\n  - {path: /d, write: '>= -1 GB/s'}\n",
     "t.yaml:3: storage[/d].write: expected a rate like '10 GB/s', got '>= -1 GB/s' (a rate "
     "cannot be negative)"),
    ("cluster: {name: x, nodes: a}\nstorage:\n  - {path: /d, import_torch: '<= -1 s'}\n",
     "t.yaml:3: storage[/d].import_torch: expected a time like '5 s', got '<= -1 s' (a time "
     "cannot be negative)"),
    ("cluster: {name: x, nodes: a}\nstorage:\n  - {path: /d, free: 1 GB, io_size: 1 PiB}\n",
     "t.yaml:3: storage[/d].io_size: expected a size from 1 MiB to 1 TiB, got '1 PiB'"),
    ("cluster: {name: x, nodes: a}\ngpus: {count: 1, power_limit: '>= -700 W'}\n",
     "t.yaml:2: gpus.power_limit: expected a power like '700 W', got '>= -700 W' (a power "
     "cannot be negative)"),
    ("cluster: {name: x, nodes: a}\ngpus: {count: 1, temperature: '<= -300 C'}\n",
     "t.yaml:2: gpus.temperature: expected a temperature like '85 C', got '<= -300 C' (a "
     "temperature cannot be below absolute zero)"),
    ("cluster: {name: x, nodes: a}\ngpus: {count: -8}\n",
     "t.yaml:2: gpus.count: expected a count like 192, got -8 (a count cannot be negative)"),
    ("cluster: {name: x, nodes: a}\nhost: {memory: '>= 1e300 PiB'}\n",
     "t.yaml:2: host.memory: expected a size like '1.5 TiB', got '>= 1e300 PiB' (too large: "
     "a number of the spec is below 1e15; write a larger unit)"),
    ("cluster: {name: x, nodes: a}\nhost: {memory: '>= 2e15 B'}\n",
     "t.yaml:2: host.memory: expected a size like '1.5 TiB', got '>= 2e15 B' (too large: a "
     "number of the spec is below 1e15; write a larger unit)"),
    ("cluster: {name: x, nodes: 'n[1-2]'}\ninterconnect: {busbw: '>= -5 GB/s', "
     "payloads: [4 GiB]}\n",
     "t.yaml:2: interconnect.busbw: expected a share of theoretical like '>= 80%' or a bus "
     "bandwidth like '>= 360 GB/s', got '>= -5 GB/s'"),
    ("cluster: {name: x, nodes: 'n[1-2]'}\ninterconnect: {busbw: '>= 5 GB/s', ranks_per_node: "
     "100000, backend: gloo, payloads: [4 GiB]}\n",
     "t.yaml:2: interconnect.ranks_per_node: expected a whole number from 1 to 512, got "
     "100000"),
    ("cluster: {name: x, nodes: 'n[1-2]', launcher: sim}\ngpus: {count: 8}\nsim: {memory: 0 B}\n",
     "t.yaml:3: sim.memory: expected a size of at least 1 GiB like '2 TiB', got '0 B'"),
    ("cluster: {name: x, nodes: 'n[1-2]', launcher: sim}\ngpus: {count: 8}\n"
     "sim: {gpus_per_node: 1000000000}\n",
     "t.yaml:3: sim.gpus_per_node: expected a whole number from 1 to 64, got 1000000000"),
    ("cluster: {name: x, nodes: 'n[1-2]', launcher: sim}\ngpus: {count: 8}\n"
     "sim: {latency: -1 s}\n",
     "t.yaml:3: sim.latency: expected a time like '5 s', got '-1 s' (a time cannot be "
     "negative)"),
    ("cluster: {name: x, nodes: a}\nstorage:\n  - {path: /d, free: 1 GB, metadata_files: "
     "1000000000}\n",
     "t.yaml:3: storage[/d].metadata_files: expected a whole number from 1 to 1000000, got "
     "1000000000"),
    (NETWORK.replace("NICS", "99999999999999999999999999"),
     "t.yaml:6: interconnect.inter_node.nics_per_node: expected a whole number from 1 to 64, "
     "got 99999999999999999999999999"),
    (NETWORK.replace("NICS", "65"),
     "t.yaml:6: interconnect.inter_node.nics_per_node: expected a whole number from 1 to 64, "
     "got 65"),
    (NETWORK.replace("NICS", "8") + "  iterations: 10000000000\n",
     "t.yaml:7: interconnect.iterations: expected a whole number from 1 to 100000, got "
     "10000000000"),
    (NETWORK.replace("NICS", "8") + "  warmup: 10001\n",
     "t.yaml:7: interconnect.warmup: expected a whole number from 1 to 10000, got 10001"),
    ("cluster: {name: x, nodes: a}\nfabric:\n  ports: 1e12\n",
     "t.yaml:3: fabric.ports: expected between 1 and 64 ports per node, got '1e12'"),
    ("cluster: {name: x, nodes: a}\nfabric:\n  ports: 65\n",
     "t.yaml:3: fabric.ports: expected between 1 and 64 ports per node, got '65'"),
    ("cluster: {name: x, nodes: a}\nfabric:\n  mtu: 1e12\n",
     "t.yaml:3: fabric.mtu: expected an MTU between 68 and 65535 bytes (4096 on InfiniBand, "
     "9000 for jumbo Ethernet frames), got '1e12'"),
    ("cluster: {name: x, nodes: a}\nfabric:\n  mtu: 67\n",
     "t.yaml:3: fabric.mtu: expected an MTU between 68 and 65535 bytes (4096 on InfiniBand, "
     "9000 for jumbo Ethernet frames), got '67'"),
])
def test_negative_zero_and_absurd_numbers_are_refused(text: str, message: str) -> None:
    assert error_of(text) == message


def test_a_count_beyond_any_float_is_refused_not_a_crash() -> None:
    big = 10**400
    assert error_of(f"cluster: {{name: x, nodes: a}}\ngpus: {{count: {big}}}\n") == (
        f"t.yaml:2: gpus.count: expected a count like 192, got {str(big)[:100]}... (401 "
        "characters)")


def test_a_version_of_thousands_of_digits_is_refused() -> None:
    version = "9" * 5000
    message = error_of(BASE.replace("cpu_cores: 1", f"software: {{torch: '>= {version}'}}"))
    assert message.startswith("t.yaml:2: host.software.torch: expected a version bound like "
                              "'>= 5.15', got '>= 9999")
    assert message.endswith("9" * 97 + "... (5003 characters)'")
    assert len(message) <= MAX_LINE


# -- cluster.name: shown as written, so printable and bounded ------------------------------

@pytest.mark.parametrize(("name", "message"), [
    ('"acme\\e[31mRED\\e[2J"',
     "t.yaml:1: cluster.name: expected a name for the cluster of printable characters, got "
     "'acme\\x1b[31mRED\\x1b[2J' (not printable: U+001B at position 5, U+001B at position "
     "13)"),
    ('"a\\u202eb\\nc\\td\\x00e"',
     "t.yaml:1: cluster.name: expected a name for the cluster of printable characters, got "
     "'a\\u202eb\\nc\\td\\x00e' (not printable: U+202E at position 2, U+000A at position "
     "4, U+0009 at position 6 and 1 more)"),
    ("x" * 3_000_000,
     "t.yaml:1: cluster.name: expected a name for the cluster of at most 128 characters, "
     "got '" + "x" * 40 + "... (3000000 characters)'"),
    ("x" * 129,
     "t.yaml:1: cluster.name: expected a name for the cluster of at most 128 characters, "
     "got '" + "x" * 40 + "... (129 characters)'"),
])
def test_a_cluster_name_a_terminal_would_act_on_or_of_megabytes_is_refused(
        name: str, message: str) -> None:
    """The name heads the terminal's summary, the reports and the run's directory: refused
    as node names are (before, a 3 MB name was one 3 MB line, and an ESC cleared the
    screen)."""
    assert error_of(BASE.replace("name: x", f"name: {name}")) == message


def test_a_cluster_name_of_printable_words_is_kept_as_written() -> None:
    for name in ("x" * 128, "ACME H100 trial (hall B)", "Zürich-Süd"):
        assert parse_spec(BASE.replace("name: x", f"name: {name}"), "t.yaml").cluster.name \
            == name


def test_pytest_refuses_an_escape_in_the_cluster_name_without_echoing_it(
        pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", trial=BASE.replace("name: x", 'name: "acme\\e[2J"'))
    result = pytester.runpytest("--cluster=trial.yaml")
    output = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "\x1b" not in output and "Traceback" not in output
    assert "ERROR: trial.yaml:1: cluster.name: expected a name for the cluster of printable " \
        "characters, got 'acme\\x1b[2J' (not printable: U+001B at position 5)" in output


# -- the YAML itself: depth, aliases, merge keys, documents --------------------------------

@pytest.mark.parametrize("levels", [65, 5000])
def test_deep_nesting_is_refused_at_its_line(levels: int) -> None:
    too_deep = "t.yaml:3: YAML nested more than 64 levels deep; a spec needs a few"
    assert error_of(BASE + "x: " + "[" * (levels - 1) + "]" * (levels - 1) + "\n") == too_deep
    assert error_of(BASE + "x: " + "{a: " * (levels - 1) + "1" + "}" * (levels - 1) + "\n") \
        == too_deep
    # 64 levels: the root map and 63 below it
    assert error_of(BASE + "x: " + "[" * 63 + "]" * 63 + "\n") == (
        "t.yaml:3: x: unknown key (known keys: cluster, host, storage, gpus, interconnect, sim, "
        "ssh, slurm, baseline, sla, soak, training, fabric)")


BILLION_LAUGHS = "a: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(
    f"{c}: &{c} [" + ",".join([f"*{p}"] * 9) + "]\n" for p, c in zip("abcdefgh", "bcdefghi",
                                                                      strict=True))
MERGE_LAUGHS = "a: &a {a0: 1, a1: 1, a2: 1, a3: 1, a4: 1, a5: 1, a6: 1, a7: 1, a8: 1, a9: 1}\n" + \
    "".join(f"{c}: &{c} {{<<: [" + ",".join([f"*{p}"] * 10) + "]}\n"
            for p, c in zip("abcdefgh", "bcdefghi", strict=True)) + "<<: *i\n"


@pytest.mark.parametrize(("text", "line"), [(BILLION_LAUGHS, 6), (MERGE_LAUGHS, 5)])
def test_a_billion_laughs_stops_early(text: str, line: int) -> None:
    assert len(text) < 700
    assert error_of(text + BASE) == (
        f"t.yaml:{line}: more than 100000 YAML values (each alias counted as a copy of what it "
        "names); a spec needs far fewer")


def test_small_anchors_for_reuse_still_work() -> None:
    spec = parse_spec("cluster: {name: x, nodes: a}\nstorage:\n"
                      "  - &fs {path: /a, write: '>= 1 GB/s', read: '>= 2 GB/s'}\n"
                      "  - {<<: *fs, path: /b}\n", "t.yaml")
    assert [(fs.path, fs.read is not None) for fs in spec.storage] == [("/a", True),
                                                                      ("/b", True)]


@pytest.mark.parametrize(("text", "message"), [
    ("cluster: &c {name: x, nodes: a, <<: *c}\nhost: {cpu_cores: 1}\n",
     "t.yaml:1: YAML alias *c inside what &c names: a spec cannot refer to itself"),
    ("x: &l [1, [*l]]\n" + BASE,
     "t.yaml:1: YAML alias *l inside what &l names: a spec cannot refer to itself"),
    ("a0: &a0 {k: 1}\n" + "".join(f"a{i}: &a{i} {{<<: *a{i - 1}}}\n" for i in range(1, 100))
     + BASE,
     "t.yaml:64: YAML nested more than 64 levels deep (with alias *a62 expanded); a spec "
     "needs a few"),
    (BASE + "---\n" + BASE,
     "t.yaml:3: YAML syntax error: a spec is one document, but found another (a second '---')"),
    ("x: &a 1\ny: &a 2\n" + BASE,
     "t.yaml:2: YAML syntax error: anchor &a is defined twice (first on line 1)"),
])
def test_alias_cycles_and_odd_documents_are_refused(text: str, message: str) -> None:
    assert error_of(text) == message


def test_a_merge_of_a_scalar_is_a_spec_error() -> None:
    assert error_of("cluster: {name: x, nodes: a}\nhost: {<<: 5, cpu_cores: 1}\n") == (
        "t.yaml:2: host: YAML merge key (<<): expected a map or a list of maps, got 5")


# -- nodes: linear, bounded -----------------------------------------------------------

def test_more_than_65536_nodes_are_refused() -> None:
    text = ("cluster: {name: x, nodes: ['gpu-[000001-060000]', 'gpu-[060001-120000]', "
            "'gpu-[120001-133000]']}\nhost: {cpu_cores: 1}\n")
    assert error_of(text) == ("t.yaml:1: cluster.nodes[1]: more than 65536 nodes; test a "
                              "cluster in parts of at most 65536 (one spec each)")
    spec = parse_spec("cluster: {name: x, nodes: ['gpu-[000001-060000]', "
                      "'gpu-[060001-065536]']}\nhost: {cpu_cores: 1}\n", "t.yaml")
    assert len(spec.cluster.nodes) == 65536 and spec.cluster.nodes[-1] == "gpu-065536"


@pytest.mark.slow
def test_133k_names_listed_one_by_one_are_refused() -> None:
    names = "".join(f"    - gpu-{i:06d}\n" for i in range(1, 133001))
    assert error_of(f"cluster:\n  name: x\n  nodes:\n{names}host: {{cpu_cores: 1}}\n") == (
        "t.yaml:99997: more than 100000 YAML values (each alias counted as a copy of what it "
        "names); a spec needs far fewer")


def test_duplicate_nodes_are_one_error_per_entry() -> None:
    text = "cluster: {name: x, nodes: ['n[1-60000]', 'n[1-60000]']}\nhost: {cpu_cores: 1}\n"
    assert error_of(text) == ("t.yaml:1: cluster.nodes[1]: nodes 'n1', 'n2', 'n3', 'n4', 'n5' "
                              "and 59995 more are listed twice")


def test_a_hostlist_of_many_brackets_is_not_a_recursion_error() -> None:
    message = error_of(BASE.replace("nodes: a", "nodes: '" + "a[1]" * 3000 + "'"))
    assert message.startswith("t.yaml:1: cluster.nodes: 'a1a1a1")
    assert message.endswith("a1a1... (6000 characters)' is not a valid hostname (letters, "
                            "digits, '-', '_' and '.')")  # cut (issue 38)


# -- bounded messages ------------------------------------------------------------------

def test_many_problems_show_the_first_twenty() -> None:
    text = BASE + "".join(f"k{i}: 1\n" for i in range(30))
    known = ("(known keys: cluster, host, storage, gpus, interconnect, sim, ssh, slurm, "
             "baseline, sla, soak, training, fabric)")
    assert error_of(text) == "\n".join(
        ["t.yaml: 30 problems in the spec:",
         *(f"  t.yaml:{i + 3}: k{i}: unknown key {known}" for i in range(20)),
         "  ... and 10 more"])


def test_a_huge_value_is_cut_in_the_message() -> None:
    message = error_of(BASE.replace("cpu_cores: 1", "cpu_cores: '" + "x" * 100_000 + "'"))
    assert message == ("t.yaml:2: host.cpu_cores: expected a count like 192, got '"
                       + "x" * 100 + "... (100000 characters)'")
    assert len(message) <= MAX_LINE


@pytest.mark.slow
def test_a_huge_number_of_errors_stays_small() -> None:
    text = BASE + "".join(f"k{i}: 1\n" for i in range(49_000))
    message = error_of(text)
    assert message.splitlines()[0] == "t.yaml: 49000 problems in the spec:"
    assert message.splitlines()[-1] == "  ... and 48980 more"
    assert len(message) < 3000


# -- the spec file: a regular file, read bounded ------------------------------------------

def test_only_a_regular_file_is_read(tmp_path: Path) -> None:
    sock = tmp_path / "sock.yaml"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(sock))
    server.close()
    for path, what in {"/dev/null": "a character device", str(sock): "a socket",
                       str(tmp_path): "a directory"}.items():
        with pytest.raises(SpecError) as info:
            load_spec(path)
        assert str(info.value) == f"{path}: is {what}, expected a YAML spec file"
    link = tmp_path / "trial.yaml"
    link.symlink_to("/dev/null")
    with pytest.raises(SpecError) as info:
        load_spec(link)
    assert str(info.value) == f"{link}: is a character device, expected a YAML spec file"


def _limited() -> None:
    """In the child: at most 2 GiB of memory (reading /dev/zero whole would take it all)."""
    resource.setrlimit(resource.RLIMIT_AS, (2**31, 2**31))


@pytest.mark.parametrize("kind", ["/dev/zero", "fifo"])
def test_pytest_refuses_dev_zero_and_a_fifo_as_a_usage_error(kind: str, tmp_path: Path) -> None:
    path, what = "/dev/zero", "a character device"
    if kind == "fifo":
        path, what = str(tmp_path / "trial.yaml"), "a FIFO (named pipe)"
        os.mkfifo(path)
    # the timeout ends the hang of a FIFO opened for reading with no writer (before)
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                           f"--cluster={path}"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60, check=False, preexec_fn=_limited)
    output = done.stdout + done.stderr
    assert (done.returncode, output.strip()) == (
        4, f"ERROR: {path}: is {what}, expected a YAML spec file")

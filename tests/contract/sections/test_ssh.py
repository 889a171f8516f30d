"""contract/sections/ssh.py: the `ssh:` section; nothing from the spec reaches ssh's command line
but allowlisted options with checked values."""

from __future__ import annotations

import pytest

from pytest_cluster.contract.launchers import KINDS
from pytest_cluster.contract.model import ClusterSpec, SshSpec
from pytest_cluster.contract.reading.compose import compose
from pytest_cluster.contract.reading.located_errors import Ctx
from pytest_cluster.contract.sections.ssh import ALLOWED, REFUSED, parse_ssh

ALLOWLIST = ", ".join(ALLOWED)
SSH = next(name for name, kind in KINDS.items() if kind.section == "ssh")


def parsed(text: str | None, launcher: str = SSH) -> tuple[SshSpec | None, list[str]]:
    ctx = Ctx("t.yaml")
    node = None if text is None else compose(text, "t.yaml")
    cluster = ClusterSpec("c", ("a",), launcher, "python3", 600.0, 64)
    return parse_ssh(ctx, node, cluster), [str(error) for error in ctx.errors]


def test_left_out_it_is_ssh_configs_own_for_the_ssh_launcher_alone() -> None:
    for name, kind in KINDS.items():
        assert parsed(None, name) == (SshSpec() if kind.section == "ssh" else None, [])


def test_options_keep_their_order_and_a_yaml_boolean_is_yes_or_no() -> None:
    spec, errors = parsed("{user: ubuntu, port: 2222, connect_timeout: 30 s, options: "
                          "{StrictHostKeyChecking: accept-new, compression: true, "
                          "ProxyJump: 'u@j1:22,j2'}}")
    assert errors == []
    assert spec == SshSpec(user="ubuntu", port=2222, connect_timeout_s=30.0, options=(
        ("StrictHostKeyChecking", "accept-new"), ("compression", "yes"),
        ("ProxyJump", "u@j1:22,j2")))


@pytest.mark.parametrize("option", sorted(REFUSED))
def test_each_refused_option_says_why(option: str) -> None:
    _, errors = parsed(f"{{options: {{{option}: x}}}}")
    assert errors == [f"t.yaml:1: ssh.options.{option}: not on the allowlist of ssh options: "
                      f"{REFUSED[option]}; allowed: {ALLOWLIST}"]


def test_an_option_off_the_allowlist_is_refused_with_the_closest_allowed() -> None:
    _, errors = parsed("{options: {StrictHostKeyChekcing: no, Tunnel: yes}}")
    assert errors == [
        "t.yaml:1: ssh.options.StrictHostKeyChekcing: not on the allowlist of ssh options: "
        f"did you mean 'StrictHostKeyChecking'?; allowed: {ALLOWLIST}",
        f"t.yaml:1: ssh.options.Tunnel: not on the allowlist of ssh options; allowed: "
        f"{ALLOWLIST}"]


@pytest.mark.parametrize(("text", "message"), [
    ("{user: '-oProxyCommand=x'}", "ssh.user: expected a user name like 'ubuntu', got "
                                   "'-oProxyCommand=x'"),
    ("{port: 70000}", "ssh.port: expected a port from 1 to 65535, got 70000"),
    ("{identity_file: '-i'}", "ssh.identity_file: expected a file path like "
                              "~/.ssh/id_ed25519, got '-i'"),
    ("{options: {Ciphers: 'aes a'}}", "ssh.options.Ciphers: expected one word (no blanks or "
                                      "quotes), got 'aes a'"),
    ("{options: {LogLevel: ERROR, loglevel: INFO}}",
     "ssh.options.loglevel: given twice (as LogLevel before; ssh option names ignore case)"),
    ("{options: [StrictHostKeyChecking]}", "ssh.options: expected a map of ssh options like "
                                           "{StrictHostKeyChecking: accept-new}, got a list"),
])
def test_a_value_that_could_smuggle_an_option_or_a_word_is_refused(text: str,
                                                                  message: str) -> None:
    assert parsed(text)[1] == [f"t.yaml:1: {message}"]


@pytest.mark.parametrize("launcher", [name for name, kind in KINDS.items()
                                      if kind.section != "ssh"])
def test_given_to_another_launcher_it_is_refused(launcher: str) -> None:
    assert parsed("{user: ubuntu}", launcher) == (None, [
        f"t.yaml:1: ssh: only used with launcher: ssh (the launcher is {launcher!r})"])

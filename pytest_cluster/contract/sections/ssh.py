"""The `ssh:` section: how the ssh launcher reaches the nodes (user, port, identity file,
ssh_config file, extra `-o` options, connect timeout). Values are checked here, so nothing
from the spec can smuggle an option or a shell word into the ssh command line.

`options` is an ALLOWLIST (ALLOWED): options that only choose algorithms, files, checks or
timeouts, each with its values checked. Everything else is refused, with the reason where
there is one: options that run or load code on this machine (ProxyCommand, LocalCommand,
KnownHostsCommand, PKCS11Provider, SecurityKeyProvider, ...), that hand the nodes your
credentials or environment (ForwardAgent, SendEnv, SetEnv, ...), and those the launcher
sets itself (ssh keeps the first value given, so a spec's would be silently ignored).
ProxyJump is allowed: its value is a list of hosts, checked as such, and OpenSSH runs its
own ssh to reach them, no command from the spec.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from yaml.nodes import MappingNode, Node

from pytest_cluster.contract.launchers import KINDS
from pytest_cluster.contract.model import ClusterSpec, SshSpec
from pytest_cluster.contract.reading.fields import field, or_default, positive_int, time_between
from pytest_cluster.contract.reading.mapping import Map, for_launcher
from pytest_cluster.contract.reading.spelling import closest
from pytest_cluster.contract.reading.yaml_nodes import kind, scalar
from pytest_cluster.errors import UnitError
from pytest_cluster.hostlist import is_valid_hostname
from pytest_cluster.units import foreign_digits

if TYPE_CHECKING:
    from pytest_cluster.contract.reading.located_errors import Ctx

KEYS = ("user", "port", "identity_file", "config", "options", "connect_timeout")
_USER_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$")
_OPTION_RE = re.compile(r"^[A-Za-z][A-Za-z0-9]{0,63}$")
_VALUE_RE = re.compile(r"^[^\s\"'\\#]+$")  # one word: no blanks, quotes, backslashes or '#'
_ALGORITHMS_RE = re.compile(r"^[+^-]?[A-Za-z0-9@._*-]+(?:,[A-Za-z0-9@._*-]+)*$")
_FILE_RE = re.compile(r"^[A-Za-z0-9_./~%+@:][A-Za-z0-9_./~%+@:-]*$")
_ALIAS_RE = re.compile(r"^[A-Za-z0-9_.:][A-Za-z0-9_.:-]*$")
_HOSTNAME_RE = re.compile(r"^[A-Za-z0-9_.%][A-Za-z0-9_.%-]*$")
_JUMP_RE = re.compile(r"^(?:(?P<user>[^@]+)@)?(?P<host>[^:@]+)(?::(?P<port>[0-9]{1,5}))?$")
_IPQOS_RE = re.compile(r"^(?:af[1-4][1-3]|cs[0-7]|ef|le|lowdelay|throughput|reliability|"
                       r"none|[0-9]{1,3})$")
_REKEY_RE = re.compile(r"^(?:default|none|[0-9]{1,12}[KMG]?)$")
_AUTH_METHODS = ("gssapi-with-mic", "hostbased", "publickey", "keyboard-interactive",
                 "password")
_LOG_LEVELS = ("QUIET", "FATAL", "ERROR", "INFO", "VERBOSE", "DEBUG", "DEBUG1", "DEBUG2",
               "DEBUG3")


def _yes_no(value: str) -> None:
    if value.lower() not in ("yes", "no"):
        raise UnitError(f"expected yes or no, got {value!r}")


def _one_of(*words: str) -> Callable[[str], None]:
    def check(value: str) -> None:
        if value.lower() not in {word.lower() for word in words}:
            raise UnitError(f"expected one of {', '.join(words)}, got {value!r}")
    return check


def _number(low: int, high: int) -> Callable[[str], None]:
    def check(value: str) -> None:
        if not value.isascii() or not value.isdigit() or len(value) > 6 \
                or not low <= int(value) <= high:
            raise UnitError(f"expected a whole number from {low} to {high}, got {value!r}"
                            f"{foreign_digits(value)}")
    return check


def _algorithms(value: str) -> None:
    if not _ALGORITHMS_RE.match(value):
        raise UnitError(f"expected a list of algorithm names like "
                        f"aes256-gcm@openssh.com,aes128-ctr, got {value!r}")


def _file(value: str) -> None:
    if not _FILE_RE.match(value):
        raise UnitError(f"expected a file path like ~/.ssh/known_hosts, or none, got {value!r}")


def _agent(value: str) -> None:
    if value != "SSH_AUTH_SOCK" and not _FILE_RE.match(value):
        raise UnitError(f"expected an agent socket path, none or SSH_AUTH_SOCK, got {value!r}")


def _alias(value: str) -> None:
    if not _ALIAS_RE.match(value):
        raise UnitError(f"expected a host name to look up in known_hosts, got {value!r}")


def _hostname(value: str) -> None:
    if not _HOSTNAME_RE.match(value) or "%h" not in value:
        raise UnitError(f"expected a name made from the node's, like %h.ib.cluster (without "
                        f"%h every node would be the same host), got {value!r}")


def _jumps(value: str) -> None:
    """`none`, or jump hosts `[user@]host[:port]`, comma-separated; none starts with '-'."""
    if value == "none":
        return
    for hop in value.split(","):
        match = _JUMP_RE.match(hop)
        port = match.group("port") if match else None
        if (match is None or not is_valid_hostname(match.group("host"))
                or (match.group("user") is not None and not _USER_RE.match(match.group("user")))
                or (port is not None and not 1 <= int(port) <= 65535)):
            raise UnitError(f"expected jump hosts like user@bastion:22,gw2 (host names, "
                            f"an optional user and port), got {value!r}")


def _methods(value: str) -> None:
    if not all(method in _AUTH_METHODS for method in value.split(",")):
        raise UnitError(f"expected a comma-separated list of {', '.join(_AUTH_METHODS)}, "
                        f"got {value!r}")


def _match(pattern: re.Pattern[str], what: str) -> Callable[[str], None]:
    def check(value: str) -> None:
        if not pattern.match(value):
            raise UnitError(f"expected {what}, got {value!r}")
    return check


#: The ssh options a spec may set, each with the check of its value.
ALLOWED: dict[str, Callable[[str], None]] = {
    "AddressFamily": _one_of("any", "inet", "inet6"),
    "CASignatureAlgorithms": _algorithms,
    "CertificateFile": _file,
    "CheckHostIP": _yes_no,
    "Ciphers": _algorithms,
    "Compression": _yes_no,
    "ConnectionAttempts": _number(1, 10),
    "GlobalKnownHostsFile": _file,
    "GSSAPIAuthentication": _yes_no,
    "HashKnownHosts": _yes_no,
    "HostKeyAlgorithms": _algorithms,
    "HostKeyAlias": _alias,
    "HostName": _hostname,
    "IdentitiesOnly": _yes_no,
    "IdentityAgent": _agent,
    "IPQoS": _match(_IPQOS_RE, "a DSCP class like af21, cs1, ef, lowdelay or none"),
    "KbdInteractiveAuthentication": _yes_no,
    "KexAlgorithms": _algorithms,
    "LogLevel": _one_of(*_LOG_LEVELS),
    "MACs": _algorithms,
    "NumberOfPasswordPrompts": _number(0, 10),
    "PasswordAuthentication": _yes_no,
    "PreferredAuthentications": _methods,
    "ProxyJump": _jumps,
    "PubkeyAcceptedAlgorithms": _algorithms,
    "PubkeyAuthentication": _yes_no,
    "RekeyLimit": _match(_REKEY_RE, "an amount of data like 1G, default or none"),
    "StrictHostKeyChecking": _one_of("yes", "no", "accept-new", "off", "ask"),
    "TCPKeepAlive": _yes_no,
    "UpdateHostKeys": _one_of("yes", "no", "ask"),
    "UserKnownHostsFile": _file,
    "VerifyHostKeyDNS": _one_of("yes", "no", "ask"),
}
_ALLOWED = {name.lower(): name for name in ALLOWED}

_RUNS_CODE = "it runs a command or loads code on this machine"
_LAUNCHERS = "the launcher sets it itself, and ssh keeps the first value given"
_HANDS_OVER = "it hands the nodes your credentials or environment"
#: Why some options are refused (all others: they are not on the allowlist).
REFUSED = {
    **dict.fromkeys(("proxycommand", "localcommand", "permitlocalcommand", "remotecommand",
                     "knownhostscommand", "pkcs11provider", "securitykeyprovider",
                     "proxyusefdpass", "include", "match"), _RUNS_CODE),
    **dict.fromkeys(("batchmode", "controlmaster", "controlpath", "controlpersist",
                     "serveraliveinterval", "serveralivecountmax", "requesttty",
                     "sessiontype", "stdinnull", "forkafterauthentication",
                     "escapechar"), _LAUNCHERS),
    **dict.fromkeys(("forwardagent", "forwardx11", "forwardx11trusted",
                     "gssapidelegatecredentials", "sendenv", "setenv"), _HANDS_OVER),
    "connecttimeout": "use ssh.connect_timeout",
    "user": "use ssh.user",
    "port": "use ssh.port",
    "identityfile": "use ssh.identity_file",
}


def _refusal(key: str, hint: bool) -> str:
    reason = REFUSED.get(key.lower())
    if reason is None:
        close = closest(key, list(ALLOWED), cutoff=0.75) if hint else None
        reason = f"did you mean {close!r}?" if close else ""
    return (f"not on the allowlist of ssh options{': ' + reason if reason else ''}; "
            f"allowed: {', '.join(ALLOWED)}")


def _path(raw: object) -> str:
    if not isinstance(raw, str) or not raw.strip() or raw.startswith("-") or "\n" in raw:
        raise UnitError(f"expected a file path like ~/.ssh/id_ed25519, got {raw!r}")
    return raw.strip()


def _user(raw: object) -> str:
    if not isinstance(raw, str) or not _USER_RE.match(raw):
        raise UnitError(f"expected a user name like 'ubuntu', got {raw!r}")
    return raw


def _port(raw: object) -> int:
    value = positive_int(raw)
    if value > 65535:
        raise UnitError(f"expected a port from 1 to 65535, got {raw!r}")
    return value


def _options(ctx: Ctx, node: Node | None) -> tuple[tuple[str, str], ...]:
    if node is None:
        return ()
    if not isinstance(node, MappingNode):
        ctx.error(node, "ssh.options", f"expected a map of ssh options like "
                  f"{{StrictHostKeyChecking: accept-new}}, got {kind(node)}")
        return ()
    found: dict[str, tuple[str, str]] = {}  # by the name in lower case, as ssh reads it
    for key_node, value_node in node.value:
        key = scalar(key_node)
        path = f"ssh.options.{key}"
        if not isinstance(key, str) or not _OPTION_RE.match(key):
            ctx.error(key_node, path, f"expected an ssh option name like ServerAliveInterval, "
                      f"got {key!r}")
            continue
        if key.lower() not in _ALLOWED:
            ctx.error(key_node, path, _refusal(key, hint=not ctx.full))
            continue
        if key.lower() in found:
            ctx.error(key_node, path, f"given twice (as {found[key.lower()][0]} before; ssh "
                      "option names ignore case)")
            continue
        value = scalar(value_node)
        if isinstance(value, bool):
            value = "yes" if value else "no"
        text = str(value)
        if not isinstance(value, (str, int)) or not _VALUE_RE.match(text):
            ctx.error(value_node, path, f"expected one word (no blanks or quotes), got {value!r}")
            continue
        try:
            ALLOWED[_ALLOWED[key.lower()]](text)
        except UnitError as exc:
            ctx.error(value_node, path, str(exc))
            continue
        found[key.lower()] = (key, text)
    return tuple(found.values())


def parse_ssh(ctx: Ctx, node: Node | None, cluster: ClusterSpec) -> SshSpec | None:
    if node is None:
        return SshSpec() if KINDS[cluster.launcher].section == "ssh" else None
    if not for_launcher(ctx, node, "ssh", cluster):
        return None
    table = Map(ctx, node, "ssh", KEYS)
    if not isinstance(node, MappingNode):
        return None
    result = SshSpec(
        user=field(ctx, table.take("user"), "ssh.user", _user),
        port=field(ctx, table.take("port"), "ssh.port", _port),
        identity_file=field(ctx, table.take("identity_file"), "ssh.identity_file", _path),
        config=field(ctx, table.take("config"), "ssh.config", _path),
        options=_options(ctx, table.take("options")),
        connect_timeout_s=or_default(field(ctx, table.take("connect_timeout"),
                                           "ssh.connect_timeout",
                                           time_between(1, 300, "from 1 s to 5 min")), 10.0),
    )
    table.finish()
    return result

"""The `ssh:` section: how the ssh launcher reaches the nodes (user, port, identity file,
ssh_config file, extra `-o` options, connect timeout). Values are checked here, so nothing
from the spec can smuggle an option or a shell word into the ssh command line."""

from __future__ import annotations

import re

from yaml.nodes import MappingNode, Node

from pytest_cluster.errors import UnitError
from pytest_cluster.spec.fields import (
    Ctx,
    Map,
    field,
    for_launcher,
    kind,
    positive_int,
    scalar,
    time_between,
)
from pytest_cluster.spec.model import ClusterSpec, SshSpec

KEYS = ("user", "port", "identity_file", "config", "options", "connect_timeout")
_USER_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$")
_OPTION_RE = re.compile(r"^[A-Za-z][A-Za-z0-9]*$")
_VALUE_RE = re.compile(r"^[^\s\"'\\]+$")  # one word: no blanks, quotes or backslashes
#: Options the launcher sets itself; a spec setting them would break batch mode or timeouts.
RESERVED = {"batchmode", "connecttimeout", "controlmaster", "controlpath", "controlpersist",
            "proxycommand", "localcommand", "permitlocalcommand", "remotecommand"}


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
    found = []
    for key_node, value_node in node.value:
        key = scalar(key_node)
        path = f"ssh.options.{key}"
        if not isinstance(key, str) or not _OPTION_RE.match(key):
            ctx.error(key_node, path, f"expected an ssh option name like ServerAliveInterval, "
                      f"got {key!r}")
            continue
        if key.lower() in RESERVED:
            ctx.error(key_node, path, "set by the launcher itself (batch mode, timeouts, "
                      "connection reuse) or able to run commands; not allowed here")
            continue
        value = scalar(value_node)
        if isinstance(value, bool):
            value = "yes" if value else "no"
        text = str(value)
        if not isinstance(value, (str, int)) or not _VALUE_RE.match(text):
            ctx.error(value_node, path, f"expected one word (no blanks or quotes), got {value!r}")
            continue
        found.append((key, text))
    return tuple(found)


def parse_ssh(ctx: Ctx, node: Node | None, cluster: ClusterSpec) -> SshSpec | None:
    if node is None:
        return SshSpec() if cluster.launcher == "ssh" else None
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
        connect_timeout_s=field(ctx, table.take("connect_timeout"), "ssh.connect_timeout",
                                time_between(1, 300, "from 1 s to 5 min")) or 10.0,
    )
    table.finish()
    return result

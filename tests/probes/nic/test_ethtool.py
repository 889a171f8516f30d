"""probes/nic/ethtool.py: an interface's driver, as `ethtool -i` prints it (ETHTOOL_GDRVINFO)."""

from __future__ import annotations

import ctypes
import errno
import fcntl
import struct
from typing import Any

import pytest

from pytest_cluster.probes.nic import ethtool


def answering(fields: list[bytes], interface: str = "eth0") -> Any:
    """An ioctl that fills the request's ethtool_drvinfo as the kernel does, asked of
    `interface`."""
    def ioctl(fd: int, request: int, argument: bytes) -> bytes:
        assert request == ethtool.SIOCETHTOOL and len(argument) == ethtool.IFREQ_BYTES
        name, address = struct.unpack_from("16sP", argument)
        assert name.rstrip(b"\0") == interface.encode()
        assert ctypes.c_uint32.from_address(address).value == ethtool.ETHTOOL_GDRVINFO
        for index, field in enumerate(fields):
            ctypes.memmove(address + 4 + 32 * index, field, len(field))
        return argument
    return ioctl


def test_the_drivers_strings_are_read_up_to_their_nul(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fcntl, "ioctl", answering(
        [b"mlx5_core\0", b"24.04-0.6.6\0junk", b"28.39.1002 (MT_0000000838)\0",
         b"0000:3a:00.0\0"]))
    assert ethtool.drvinfo("eth0") == {"driver": "mlx5_core", "driver_version": "24.04-0.6.6",
                                       "firmware": "28.39.1002 (MT_0000000838)",
                                       "bus": "0000:3a:00.0"}


def test_bytes_that_are_no_text_are_replaced_not_a_crash(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fcntl, "ioctl", answering([b"\xff\xfe\0", b"x" * 32]))
    info = ethtool.drvinfo("eth0")
    assert info["driver"] == "\ufffd\ufffd"
    assert info["driver_version"] == "x" * 32  # no NUL: the field's 32 bytes
    assert (info["firmware"], info["bus"]) == ("", "")


def test_an_interface_that_does_not_answer_is_an_error_with_the_reason(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(fd: int, request: int, argument: bytes) -> bytes:
        raise OSError(errno.EOPNOTSUPP, "Operation not supported")
    monkeypatch.setattr(fcntl, "ioctl", refused)
    assert ethtool.drvinfo("veth1") == {
        "error": "ethtool drvinfo of veth1: Operation not supported"}


def test_an_interface_that_does_not_exist_is_named_never_guessed() -> None:
    assert ethtool.drvinfo("nosuchif0") == {
        "error": "ethtool drvinfo of nosuchif0: No such device"}

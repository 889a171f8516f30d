"""Shared-filesystem probe: write a file with random content, read it back, remove it.

`--write PATH --token T` creates PATH/.pytest-cluster-shared-T (fsync'ed) and prints its
SHA-256; `--read` prints what this node sees there (or that it sees nothing); `--remove`
deletes it. Run as write on one node, read on every node, remove on the writer: a shared
filesystem shows every node the same bytes. Standard library only.

The file must outlive the write (other nodes read it), so unlike the storage probe's test
file it has a name; nothing of it is left behind however a run ends:

* The token is `<expires>-<12 hex digits>`: the controller's UNIX time after which no
  read of this check can still be running (see measure/storage/__init__.shared_check).
* A write that fails, or is stopped by SIGTERM, SIGINT or SIGHUP (the node runner's
  SIGTERM at the timeout or when the connection drops), removes its partial file.
* The controller removes the file when the check ends, also when it is interrupted.
* What a SIGKILL or a cut-off controller leaves is swept by the next write on the same
  filesystem (`leftovers` in its JSON: path, bytes, removed, why): a file past its
  expiry is removed; one with an expiry to come belongs to a check still running and is
  left alone, unreported. A file of a pytest-cluster before expiries (a token of 12 hex
  digits alone) is removed when older than 24 hours and reported before.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import re
import signal
import socket
import sys
import time
from types import FrameType
from typing import TypedDict

from ._lib.age import ago

PREFIX = ".pytest-cluster-shared-"
TOKEN = re.compile(r"^(?P<expires>\d{1,12})-[0-9a-f]{12}$")
LEGACY_TOKEN = re.compile(r"^[0-9a-f]{12}$")
SAFE_AGE_S = 24 * 3600


class Leftover(TypedDict):
    """A file an earlier check left, and what the sweep did with it."""

    path: str
    bytes: int
    removed: bool
    why: str


class SharedData(TypedDict, total=False):
    """The probe's payload: the file and the mode, then what the mode found."""

    file: str
    mode: str
    host: str
    error: str
    leftovers: list[Leftover]  # write
    leftovers_error: str
    sha256: str  # write, read
    bytes: int
    seen: bool  # read
    removed: bool  # remove


def sweep(path: str, now: float | None = None) -> list[Leftover]:
    """Remove the shared-check files under `path` that no check can still read; report
    them, and the ones left in place, as {path, bytes, removed, why}."""
    now = time.time() if now is None else now
    found: list[Leftover] = []
    for name in sorted(os.listdir(path)):
        if not name.startswith(PREFIX):
            continue
        token, full = name[len(PREFIX):], os.path.join(path, name)
        try:
            st = os.lstat(full)
        except FileNotFoundError:
            continue
        current, age = TOKEN.match(token), now - st.st_mtime
        if current is not None:
            expires = int(current["expires"])
            if expires >= now:
                continue  # a shared check still running
            remove = True
            stamp = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(expires))
            why = (f"its shared check ended by {stamp}; the run was cut off before "
                   "removing it")
        elif LEGACY_TOKEN.match(token):
            remove = age > SAFE_AGE_S
            why = (f"written {ago(age)} ago by a pytest-cluster older than the leftover "
                   "sweep, which records no expiry")
            why += "; older than 24 h" if remove else (
                ": left in place; remove it by hand if no pytest-cluster run is checking this "
                "filesystem (the sweep removes it once it is 24 h old)")
        else:
            continue
        removed = False
        if remove:
            try:
                os.unlink(full)
                removed = True
            except FileNotFoundError:
                continue  # another node's sweep took it
            except OSError as exc:
                why += f"; could not be removed ({exc.strerror})"
        found.append({"path": full, "bytes": st.st_size, "removed": removed, "why": why})
    return found


def write(name: str, data: SharedData) -> None:
    """Write 1 MiB of random data to `name` (a new file), fsync'ed; removed again if the
    write fails or a signal stops it."""
    def stop(signum: int, _frame: FrameType | None) -> None:
        with contextlib.suppress(OSError):
            os.unlink(name)
        sys.stderr.write(f"shared probe: stopped by {signal.Signals(signum).name}; "
                         f"removed {name}\n")
        sys.stderr.flush()
        os._exit(128 + signum)

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, stop)
    content = os.urandom(1 << 20)
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    try:
        with open(fd, "wb", closefd=False) as handle:
            handle.write(content)
            handle.flush()
            os.fsync(fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(name)
        raise
    finally:
        os.close(fd)
    data["sha256"] = hashlib.sha256(content).hexdigest()
    data["bytes"] = len(content)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--path", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("mode", choices=("write", "read", "remove"))
    args = parser.parse_args(argv)
    name = os.path.join(args.path, f"{PREFIX}{args.token}")
    data: SharedData = {"file": name, "mode": args.mode, "host": socket.gethostname()}
    if not (TOKEN.match(args.token) or LEGACY_TOKEN.match(args.token)):
        data["error"] = (f"token {args.token!r} is not <expires>-<12 hex digits>: the "
                         "controller and this probe are of different pytest-cluster versions")
        print(json.dumps({"probe": "shared_fs", "schema": 1, "data": data}))
        return 0
    try:
        if args.mode == "write":
            try:
                data["leftovers"] = sweep(args.path)
            except OSError as exc:
                data.update({"leftovers": [],
                             "leftovers_error": f"{args.path}: {exc.strerror}"})
            write(name, data)
        elif args.mode == "read":
            try:
                with open(name, "rb") as handle:
                    content = handle.read()
            except FileNotFoundError:
                data["seen"] = False
            else:
                data.update({"seen": True, "sha256": hashlib.sha256(content).hexdigest(),
                             "bytes": len(content)})
        else:
            try:
                os.remove(name)
                data["removed"] = True
            except FileNotFoundError:
                data["removed"] = False  # never written here, or swept already
    except OSError as exc:
        data["error"] = f"{args.mode} {name}: {exc.strerror or exc}"
    print(json.dumps({"probe": "shared_fs", "schema": 1, "data": data}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

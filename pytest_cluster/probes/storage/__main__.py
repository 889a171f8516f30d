"""Runs the storage probe: `python3 - --path PATH [--io-size N] [--files N] [--skip PART]`."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from types import FrameType
from typing import Any

from .parts import _error, _part, capacity, fs_type, metadata
from .sweep import sweep
from .transfer import write_and_read
from .workspace import Workspace

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .payload import StorageData, Transfer


def _stop(workspace: Workspace) -> Any:
    """A handler for SIGTERM, SIGINT, SIGHUP: remove what we wrote, then exit."""
    def handler(signum: int, _frame: FrameType | None) -> None:
        clean = workspace.remove()
        sys.stderr.write(f"storage probe: stopped by {signal.Signals(signum).name}; "
                         + ("removed what it wrote\n" if clean else
                            f"could not remove {workspace.directory}\n"))
        sys.stderr.flush()
        os._exit(128 + signum)
    return handler


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--path", required=True)
    parser.add_argument("--io-size", type=int, default=2**30)
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--skip", action="append", default=[],
                        choices=["write", "read", "metadata"])
    args = parser.parse_args(argv)
    data: StorageData = {"path": args.path, "fs_type": fs_type(args.path)}
    if not os.path.isdir(args.path):
        data["error"] = f"{args.path} does not exist or is not a directory on this node"
        print(json.dumps({"probe": "storage", "schema": 1, "data": data}))
        return 0
    workspace = Workspace(args.path)
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, _stop(workspace))
    try:
        data["leftovers"] = sweep(args.path)
    except OSError as exc:
        data["leftovers"] = []
        data["leftovers_error"] = _error(exc)["error"]
    data["capacity"] = space = _part(capacity, args.path)
    try:
        written: Transfer = {"skipped": "not in contract"}
        read: Transfer = {"skipped": "not in contract"}
        if "write" not in args.skip or "read" not in args.skip:
            free = space.get("free_bytes")
            if free is not None and free < args.io_size * 1.05:
                written = {"error": f"not enough free space for a {args.io_size} byte test "
                                    f"file ({free} bytes free)"}
                read = {"error": f"no test file to read: {written['error']}"}
            else:
                written, read = write_and_read(workspace, args.io_size, args.skip,
                                               data["fs_type"])
        data["write"] = {"skipped": "not in contract"} if "write" in args.skip else written
        data["read"] = {"skipped": "not in contract"} if "read" in args.skip else read
        if "metadata" in args.skip:
            data["metadata"] = {"skipped": "not in contract"}
        else:
            try:
                workdir = workspace.make_directory()
            except OSError as exc:
                data["metadata"] = {"error": f"cannot create a directory in {args.path}: "
                                             f"{exc.strerror}"}
            else:
                data["metadata"] = _part(metadata, workdir, args.files)
    finally:
        data["cleaned_up"] = workspace.remove()
    print(json.dumps({"probe": "storage", "schema": 1, "data": data}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

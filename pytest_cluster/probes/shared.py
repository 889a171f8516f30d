"""Shared-filesystem probe: write a file with random content, read it back, remove it.

`--write PATH --token T` creates PATH/.pytest-cluster-shared-T (fsync'ed) and prints its
SHA-256; `--read` prints what this node sees there (or that it sees nothing); `--remove`
deletes it. Run as write on one node, read on every node, remove on the writer: a shared
filesystem shows every node the same bytes. Standard library only.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import socket
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--path", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("mode", choices=("write", "read", "remove"))
    args = parser.parse_args(argv)
    name = os.path.join(args.path, f".pytest-cluster-shared-{args.token}")
    data: dict[str, object] = {"file": name, "mode": args.mode, "host": socket.gethostname()}
    try:
        if args.mode == "write":
            content = os.urandom(1 << 20)
            with open(name, "wb") as handle:
                handle.write(content)
                handle.flush()
                os.fsync(handle.fileno())
            data["sha256"] = hashlib.sha256(content).hexdigest()
            data["bytes"] = len(content)
        elif args.mode == "read":
            try:
                with open(name, "rb") as handle:
                    content = handle.read()
            except FileNotFoundError:
                data["seen"] = False
            else:
                data.update(seen=True, sha256=hashlib.sha256(content).hexdigest(),
                            bytes=len(content))
        else:
            os.remove(name)
            data["removed"] = True
    except OSError as exc:
        data["error"] = f"{args.mode} {name}: {exc.strerror or exc}"
    print(json.dumps({"probe": "shared", "schema": 1, "data": data}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Runs one checkpoint rank: `--phase write|read|remove --path PATH --token TOKEN ...`."""

from __future__ import annotations

import argparse
import errno
import json
import os
import socket
import sys

from .blocks import CHALLENGE, PAGE
from .burst import read, write
from .files import TOKEN, remove, writer_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .payload import RankData


def _indexes(text: str) -> list[int]:
    """--write-nodes: node indexes, '0,1,3'."""
    try:
        found = [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not node indexes like 0,1,3: {text[:80]!r}") \
            from None
    if not found or min(found) < 0:
        raise argparse.ArgumentTypeError(f"not node indexes like 0,1,3: {text[:80]!r}")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--phase", choices=("write", "read", "remove"), required=True)
    parser.add_argument("--path", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--size", type=int, default=2**30)
    parser.add_argument("--block", type=int, default=16 * 2**20)
    parser.add_argument("--start-at", type=float, default=0.0)
    parser.add_argument("--ranks-per-node", type=int, default=1)
    parser.add_argument("--write-nodes", type=_indexes, default=None)
    parser.add_argument("--challenge", default="")
    args = parser.parse_args(argv)
    if TOKEN.match(args.token) is None or args.block % PAGE or args.block <= 0 \
            or args.size <= 0 or (args.challenge and not CHALLENGE.match(args.challenge)):
        sys.exit(f"bad arguments: token {args.token[:40]!r}, block {args.block}, "
                 f"size {args.size}")
    rank, world = int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
    info: RankData = {"rank": rank, "world": world, "host": socket.gethostname(),
                      "phase": args.phase, "block": args.block}
    try:
        if args.phase == "write":
            info.update(write(args.path, args.token, rank, args.size, args.block,
                              args.start_at))
        elif args.phase == "read":
            info["writer"] = writer_of(rank, world, args.ranks_per_node, args.write_nodes)
            info.update(read(args.path, args.token, rank, info["writer"], args.size,
                             args.block, args.start_at, args.challenge))
        else:
            info.update(remove(args.path, args.token))
    except OSError as exc:
        info["error"] = f"{args.phase} on {args.path}: {exc.strerror or exc}"
        info["errno"] = errno.errorcode.get(exc.errno or 0, "")
    print(json.dumps(info, allow_nan=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())

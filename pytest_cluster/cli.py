"""The `pytest-cluster` command: what is done with a run's evidence after the run.

    pytest-cluster verify DIR [--key PUBKEY]

Its last line states the files (FILES MATCH / FILES CHANGED) and the signature (SIGNED BY
the key given / UNSIGNED / SIGNATURE NOT CHECKED: signed, no --key / SIGNATURE INVALID)
apart; it starts with VERIFIED only when the files match and the --key given signed them.
Exits 0 when every file of DIR is as its manifest lists it (and, with --key, the manifest
is signed by that key), 1 when a file differs (or, with --key, the signature is not that
key's), 2 when DIR, its manifest or the key cannot be read as one (one line, on stderr).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pytest_cluster import __version__
from pytest_cluster.errors import BundleError
from pytest_cluster.evidence.bundle.keys import PublicKey
from pytest_cluster.evidence.bundle.verify import verify


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="pytest-cluster", description="pytest-cluster's "
                                  "evidence tools (the tests run with pytest --cluster=SPEC)")
    top.add_argument("--version", action="version", version=f"pytest-cluster {__version__}")
    commands = top.add_subparsers(dest="command", required=True)
    check = commands.add_parser(
        "verify", help="check a run directory against its signed manifest",
        description="Recompute the hash of every file of a run directory, name every "
                    "changed, missing or added one, and check the manifest's signature.",
        epilog="The last line says FILES MATCH or FILES CHANGED, and SIGNED BY the key, "
               "UNSIGNED, SIGNATURE NOT CHECKED or SIGNATURE INVALID; VERIFIED only when "
               "the files match and --key signed them. Exit 0: the files match (and --key "
               "signed them); 1: they do not, or --key did not sign them; 2: unreadable.")
    check.add_argument("run_dir", metavar="DIR", type=Path,
                       help="a run's evidence directory (e.g. reports/latest)")
    check.add_argument("--key", metavar="PUBKEY", type=Path,
                       help="public key the manifest must be signed by: a PEM public key "
                            "or an OpenSSH .pub line")
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        key = PublicKey.load(args.key) if args.key is not None else None
        verdict = verify(args.run_dir, key)
    except BundleError as exc:
        print(f"pytest-cluster verify: {exc}", file=sys.stderr)
        return 2
    print("\n".join(verdict.lines()))
    return 0 if verdict.ok else 1


if __name__ == "__main__":
    sys.exit(main())

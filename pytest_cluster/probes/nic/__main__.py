"""Runs the nic probe: `python3 - [--sysfs ROOT] [--no-ethtool] [--when LABEL]`."""

from __future__ import annotations

import getopt
import sys

from .namespace import own_interfaces
from .reading import bounded, read_ports
from .sysfs import Reader


def main(argv: list[str] | None = None) -> int:
    opts, _ = getopt.getopt(sys.argv[1:] if argv is None else argv, "",
                            ["sysfs=", "no-ethtool", "when="])
    options = dict(opts)
    root = options.get("--sysfs", "/sys")
    # ethtool asks this machine's kernel: only when the tree read is this machine's; and
    # this machine's tree must be this process's network namespace's
    ethtool = "--no-ethtool" not in options and root == "/sys"
    data = read_ports(Reader(root), ethtool, own_interfaces if root == "/sys" else None)
    if "--when" in options:  # which reading of the run this is (start, end): a label
        data["when"] = options["--when"]
    print(bounded({"probe": "nic", "schema": 1, "data": data}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The bmc probe: runs ON a node (sent as this one file, standard library only) and prints
one JSON document, the fans the node's sensors show. This example reads
/sys/class/hwmon/*/fan*_input, or, where PCX_BMC_FANS is set, takes that count (a node
without a BMC to read)."""

from __future__ import annotations

import glob
import json
import os


def main() -> None:
    given = os.environ.get("PCX_BMC_FANS")
    if given is not None:
        data = {"sensors": {"fans": int(given), "method": "PCX_BMC_FANS"}}
    else:
        fans = glob.glob("/sys/class/hwmon/hwmon*/fan*_input")
        data = {"sensors": {"fans": len(fans), "method": "/sys/class/hwmon fan inputs"}}
    print(json.dumps({"probe": "bmc", "schema": 1, "data": data}))


if __name__ == "__main__":
    main()

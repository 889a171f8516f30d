"""The `fabric:` section: every network port of each node, as the NIC probe reads it.

    fabric:
      devices: "mlx5_*"        # which ports count (default: RDMA ports, else NIC devices)
      ports: 8                 # active ports, at least
      rate: 400 Gb/s           # each counted active port's rate, at least
      link_layer: InfiniBand   # each counted port's (InfiniBand or Ethernet: RoCE)
      mtu: 4096                # each counted active port's interface MTU, at least
      pcie: max                # (the default) each counted port's NIC at its best PCIe link
      symbol_errors: 10 /h     # each counted port's symbol errors over the run, at most
      rail_busbw: 40 GB/s      # all_reduce busbw over each rail alone, pairs of nodes
      rail_tool: ib_write_bw   # or measure each rail with perftest (RDMA ports)
      rail_cuda: true          # ib_write_bw --use_cuda: GPUDirect RDMA
      flap: 30 s               # in a soak: a port seen down this long fails its node

`same_firmware` is implied on two nodes or more; `counters` (no error counter grows during
the run) and `pcie` (each NIC's PCIe link at its maximum generation and width) are on
unless `false`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from yaml.nodes import Node, ScalarNode

from pytest_cluster.contract.clauses import declared
from pytest_cluster.contract.model import Clause, FabricSpec, Rule
from pytest_cluster.contract.reading.clause_parsers import promises, written_rule
from pytest_cluster.contract.reading.fields import (
    boolean,
    field,
    one_of,
    or_default,
    text,
    time_between,
)
from pytest_cluster.contract.reading.mapping import section_map
from pytest_cluster.errors import UnitError, head

if TYPE_CHECKING:
    from pytest_cluster.contract.reading.located_errors import Ctx

#: The link layers a port may have (sysfs link_layer), by the spelling users write.
LINK_LAYERS = {"infiniband": "InfiniBand", "ib": "InfiniBand", "ethernet": "Ethernet",
               "roce": "Ethernet"}
#: What measures a rail alone (fabric.rail_busbw).
RAIL_TOOLS = ("all_reduce", "ib_write_bw")
#: A glob of port or device names: letters, digits, `_ . - /` and the wildcards `* ? [ ]`.
_GLOB = re.compile(r"^[A-Za-z0-9_.\-/*?\[\]]{1,64}$")


def link_layer(raw: object) -> str:
    name = text("InfiniBand or Ethernet")(raw)
    found = LINK_LAYERS.get(name.lower())
    if found is None:
        raise UnitError(f"expected InfiniBand or Ethernet (RoCE), got {head(name, 64)!r}")
    return found


def devices(raw: object) -> str:
    value = text("a glob of port or device names like 'mlx5_*'")(raw)
    if not _GLOB.match(value):
        raise UnitError(f"expected a glob of port or device names like 'mlx5_*' (letters, "
                        f"digits, _ . - / and * ? [ ]), got {head(value, 64)!r}")
    return value


#: What a port count and an MTU can be: ports per node (as gpus.count's GPUs), and an
#: interface's MTU (IPv4's least, 68 bytes, to the most an interface takes).
BOUNDS = {"fabric.ports": (1, 64, "between 1 and 64 ports per node"),
          "fabric.mtu": (68, 65535, "an MTU between 68 and 65535 bytes (4096 on "
                                    "InfiniBand, 9000 for jumbo Ethernet frames)")}


def _bounded(ctx: Ctx, written: dict[str, Node], found: tuple[Clause | Rule, ...]) -> None:
    """fabric.ports and fabric.mtu within what a node can have (1e30 ports is a typo)."""
    for item in found:
        if not isinstance(item, Clause) or item.key not in BOUNDS:
            continue
        bounds = BOUNDS[item.key]
        if not bounds[0] <= item.requirement.bound.value <= bounds[1]:
            node = written.get(item.key)
            raw = node.value if isinstance(node, ScalarNode) else item.requirement.text
            ctx.error(node, item.key, f"expected {bounds[2]}, got {head(str(raw), 40)!r}")


def parse_fabric(ctx: Ctx, node: Node | None, interconnect: bool = False) -> FabricSpec | None:
    """The section; `interconnect`: whether the spec has one (rail_busbw's jobs run as it
    says: backend, search_payload, warmup, iterations, timeout)."""
    table = section_map(ctx, node, "fabric")
    if table is None:
        return None
    rails = table.items.get("rail_busbw", (None, None))[0]
    tool_node, cuda_node = table.take("rail_tool"), table.take("rail_cuda")
    tool = field(ctx, tool_node, "fabric.rail_tool", one_of(RAIL_TOOLS, " or ".join(RAIL_TOOLS)))
    cuda = field(ctx, cuda_node, "fabric.rail_cuda", boolean)
    if rails is not None and not interconnect and tool in (None, "all_reduce"):
        ctx.error(rails, "fabric.rail_busbw", "needs an interconnect section: its jobs run "
                  "with its backend, search_payload, warmup, iterations and timeout (or "
                  "rail_tool: ib_write_bw)")
    if cuda and tool != "ib_write_bw":
        ctx.error(cuda_node, "fabric.rail_cuda", "only with rail_tool: ib_write_bw (an "
                  "all_reduce on NCCL already runs from GPU memory)")
    chosen = field(ctx, table.take("devices"), "fabric.devices", devices)
    flap = field(ctx, table.take("flap"), "fabric.flap",
                 time_between(0, 7 * 86400, "from 0 s to 7 days"))
    layer_node = table.take("link_layer")
    layer = field(ctx, layer_node, "fabric.link_layer", link_layer)
    rules: list[Rule] = []
    if layer is not None and layer_node is not None:
        rules.append(written_rule(ctx, layer_node, "fabric.link_layer",
                                  declared("fabric.link_layer").id,
                                  f"{layer} on every counted port"))
    firmware = declared("fabric.same_firmware")
    rules.append(Rule(firmware.id, 0, firmware.text))
    written = {f"fabric.{key}": table.items[key][1] for key in ("ports", "mtu")
               if key in table.items}
    found = promises(ctx, table, "fabric")
    _bounded(ctx, written, found)
    record = FabricSpec(clauses=(*found, *rules), link_layer=layer,
                        devices=chosen, flap_s=or_default(flap, 30.0),
                        rail_tool=or_default(tool, "all_reduce"), rail_cuda=bool(cuda))
    table.finish()
    return record

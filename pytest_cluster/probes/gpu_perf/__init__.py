"""GPU performance probe (torch): usable memory, matmul TFLOPS, memory bandwidth,
host<->device and GPU<->GPU bandwidth, with NVML sampled DURING the load.

Runs ON a node; needs torch with CUDA (nvidia-ml-py for the sampling); shipped as one
program (probes/_shipping.py) of these modules: options, timing, bandwidth and compute (the
measurements of one GPU), sampler (NVML), processes (one per GPU), payload (its types);
__main__ runs it. One process per GPU, forked before CUDA is initialised, so every GPU of
the node is loaded at once and one slow GPU stands out. Matmul is measured the way mamf-finder does:
flops = 2*m*n*k, L2 flushed before each iteration, warm-up, CUDA events, median and max.
Anything that cannot be measured is reported as {"error": reason}, never guessed.
"""

from __future__ import annotations

from .bandwidth import copy_bandwidth
from .compute import matmul
from .options import PARTS, parse_options

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .payload import GpuPerfData as GpuPerfData
    from .payload import Options as Options
    from .payload import P2pPair as P2pPair
    from .payload import PerfGpu as PerfGpu
    from .payload import Rate as Rate
    from .payload import Sdc as Sdc

__all__ = ["PARTS", "copy_bandwidth", "matmul", "parse_options"]

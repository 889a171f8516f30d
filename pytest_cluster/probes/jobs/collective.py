"""Collective benchmark, one rank of a distributed job (started by job_node).

Measures like nccl-tests: for each payload, `--warmup` collectives, then `--iterations`
back to back, timed with the host clock around the whole loop after a synchronise, and
divided (nccl-tests' "time"); each iteration is also timed on its own (CUDA events on
GPUs, the host clock on CPUs) so the spread over iterations shows a straggler. Timing
runs on zeros (sums stay finite); a last collective on rank-dependent values checks the
result ("wrong", as nccl-tests counts). Prints one JSON line with this rank's times; the
controller turns them into algbw and busbw. With `--seconds`, the stress level's loop
instead: all_reduce back to back for that long, every result checked (`sustained`).

With `--hang-bound S`, a watchdog thread ends this rank when it is still measuring S
seconds after it started (a collective that does not complete): over NCCL it first asks
the RAS service of the job's processes on this node (probes/_lib/nccl_ras.py) which ranks
are dead, missing or behind, then prints one JSON line with the payload it hung in and
RAS's answer (or why there is none) and exits with HANG_EXIT, before its node would kill
it at the job's wall clock.

Environment from job_node: RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR/PORT,
PYTEST_CLUSTER_INIT_TIMEOUT. Needs torch.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import re
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any, TypedDict

from .._lib.nccl_ras import RasReport, hang_status

COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "alltoall")
#: NCCL's INFO lines that say what it used (measure/network/nccl_log.py reads them; this is its
#: KEEP, MAX_LINES, MAX_LINE and `kept`, copied: this file is sent alone)
KEEP = re.compile(r"Using network |NET/\S{1,64} : Using |(Channel) \d{1,6}(?:/\d{1,6})? : |"
                  r"NVLS multicast support|Connected all rings|Connected NVLS|NET/Plugin")
MAX_LINES = 400
MAX_LINE = 2048
#: The exit code of a rank its watchdog ended (train.py's too).
HANG_EXIT = 3


def kept(line: str) -> bool:
    """Whether `line` of NCCL's log is one this module reads (KEEP, in its first MAX_LINE
    characters): a scan for `NCCL INFO `, an anchored pattern of bounded repeats and a
    scan for ` via `, each linear in the line."""
    cut = line[:MAX_LINE]
    at = cut.find("NCCL INFO ")
    if at < 0:
        return False
    rest = cut[at + len("NCCL INFO "):]
    found = KEEP.match(rest)
    return found is not None and (found.group(1) is None or " via " in rest[found.end():])


def nccl_debug() -> str | None:
    """Have NCCL say what it uses (INFO, subsystems INIT and NET) into a file of this
    rank's; its path, or None when the environment already directs NCCL's log (then the
    transport is not recorded, never guessed)."""
    if "NCCL_DEBUG_FILE" in os.environ or os.environ.get("NCCL_DEBUG", "INFO") != "INFO":
        return None
    handle, path = tempfile.mkstemp(prefix="pytest-cluster-nccl-", suffix=".log")
    os.close(handle)
    os.environ.update(NCCL_DEBUG="INFO", NCCL_DEBUG_SUBSYS="INIT,NET", NCCL_DEBUG_FILE=path)
    return path


class _SizeResult(TypedDict):
    bytes: int  # as nccl-tests sizes the payload (buffers)
    time_s: float  # the mean iteration's
    iteration_s: list[float]  # each iteration's (none for the sustained loop)
    wrong: int  # elements that came back wrong


class SizeResult(_SizeResult, total=False):
    """One payload's measurement (`measure`), or the sustained loop's (`sustained`: with
    its iterations, seconds, the busbw's windows and the iterations that came back
    wrong)."""

    iterations: int
    seconds: float
    windows_s: list[float]
    wrong_iterations: int
    first_wrong: int | None


class GlooInterface(TypedDict, total=False):
    """The interface gloo binds and its address (None, with `error`, if unknown)."""

    interface: str | None
    address: str | None
    error: str


class _CollectiveData(TypedDict):
    rank: int
    world: int
    backend: str  # nccl or gloo
    collective: str
    sizes: list[SizeResult]


class CollectiveData(_CollectiveData, total=False):
    """What a rank prints: its measurements and what ran them (the sim's: `simulated`)."""

    host: str
    torch: str
    device: str  # nccl: the GPU's name
    nccl: str  # nccl: its version
    nccl_log: list[str] | None  # nccl: the lines of its INFO log kept (nccl_lines)
    gloo: GlooInterface  # gloo
    simulated: bool


def nccl_lines(path: str | None) -> list[str] | None:
    """The lines of NCCL's log this run keeps (bounded), the file removed."""
    if path is None:
        return None
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            lines = [line.strip()[:MAX_LINE] for line in handle if kept(line)]
    except OSError:
        return None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)
    return lines[:MAX_LINES]


def gloo_interface() -> GlooInterface:
    """The interface gloo binds (GLOO_SOCKET_IFNAME, else the host name's address) and
    its address."""
    name = os.environ.get("GLOO_SOCKET_IFNAME")
    found: GlooInterface = {"interface": name}
    try:
        if name:
            import fcntl  # noqa: PLC0415 - only here
            import struct  # noqa: PLC0415
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
                raw = fcntl.ioctl(sock.fileno(), 0x8915,  # SIOCGIFADDR
                                  struct.pack("256s", name.encode()[:15]))
            found["address"] = socket.inet_ntoa(raw[20:24])
        else:
            found["address"] = socket.gethostbyname(socket.gethostname())
    except OSError as exc:
        found["address"] = None
        found["error"] = str(exc)
    return found


def buffers(torch: Any, collective: str, nbytes: int, world: int,
            device: Any) -> tuple[Any, Any, int]:
    """(input, output, bytes) for one payload of `nbytes` as nccl-tests sizes it: the whole
    array for all_gather / reduce_scatter / alltoall, rounded down to whole elements
    that split evenly over the ranks."""
    elements = max(world, nbytes // 4)
    if collective != "all_reduce":
        elements -= elements % world
    whole = torch.zeros(elements, dtype=torch.float32, device=device)
    if collective == "all_reduce":
        return whole, whole, elements * 4
    part = torch.zeros(elements // world, dtype=torch.float32, device=device)
    if collective == "all_gather":
        return part, whole, elements * 4
    if collective == "reduce_scatter":
        return whole, part, elements * 4
    return whole, torch.zeros_like(whole), elements * 4  # alltoall


def operation(dist: Any, collective: str, inp: Any, out: Any) -> Callable[[], Any]:
    if collective == "all_reduce":
        return lambda: dist.all_reduce(inp)
    if collective == "all_gather":
        return lambda: dist.all_gather_into_tensor(out, inp)
    if collective == "reduce_scatter":
        return lambda: dist.reduce_scatter_tensor(out, inp)
    return lambda: dist.all_to_all_single(out, inp)


def wrong(torch: Any, dist: Any, collective: str, inp: Any, out: Any, rank: int,
          world: int) -> int:
    """Run the collective once on values that depend on the rank; count bad elements
    among the first and last of the output (a cheap check of a huge buffer)."""
    inp.fill_(rank + 1)
    operation(dist, collective, inp, out)()
    got = out if collective != "all_reduce" else inp
    ends = torch.cat([got[:1024], got[-1024:]]).double().cpu()
    if collective in ("all_reduce", "reduce_scatter"):
        expected = torch.full_like(ends, world * (world + 1) / 2)
    else:  # all_gather, alltoall: block r of the output holds (came from) rank r's values
        size = got.numel()
        index = torch.cat([torch.arange(min(1024, size)), torch.arange(max(0, size - 1024),
                                                                       size)])
        expected = (index // (size // world) + 1).double()
    return int((ends != expected).sum().item())


def measure(torch: Any, dist: Any, collective: str, nbytes: int, warmup: int,
            iterations: int, rank: int, world: int, device: Any) -> SizeResult:
    inp, out, actual = buffers(torch, collective, nbytes, world, device)
    run = operation(dist, collective, inp, out)
    cuda = device.type == "cuda"

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize(device)

    for _ in range(warmup):
        run()
    sync()
    dist.barrier()
    sync()
    per_iteration: list[float] = []
    if cuda:
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                  for _ in range(iterations)]
        start = time.perf_counter()
        for begin, end in events:
            begin.record()
            run()
            end.record()
        sync()
        loop = time.perf_counter() - start
        per_iteration = [begin.elapsed_time(end) / 1e3 for begin, end in events]
    else:
        start = time.perf_counter()
        for _ in range(iterations):
            began = time.perf_counter()
            run()
            per_iteration.append(time.perf_counter() - began)
        loop = time.perf_counter() - start
    bad = wrong(torch, dist, collective, inp, out, rank, world)
    del inp, out
    if cuda:
        torch.cuda.empty_cache()
    return {"bytes": actual, "time_s": loop / iterations, "iteration_s": per_iteration,
            "wrong": bad}


def sustained(torch: Any, dist: Any, nbytes: int, seconds: float, warmup: int, rank: int,
              world: int, device: Any) -> SizeResult:
    """all_reduce back to back for `seconds` (at least), every result checked in full: each
    iteration fills the input with (rank + 1) x f (f cycling 1..7), and every element must
    come back as f x world (world + 1) / 2. The ranks agree on how many iterations to run
    next, about a second's worth at a time (rank 0's count from the pace so far and the
    time left, broadcast; 0 once the time is up), so that all stop together and the loop
    lasts its time however the pace changes."""
    inp, _, actual = buffers(torch, "all_reduce", nbytes, world, device)
    cuda = device.type == "cuda"
    for _ in range(warmup):
        dist.all_reduce(inp)
    dist.barrier()
    began = time.perf_counter()
    for _ in range(5):
        inp.fill_(1.0)
        dist.all_reduce(inp)
        int((inp != world).sum().item())
    each = max((time.perf_counter() - began) / 5, 1e-6)
    windows = 100  # by time: the busbw of each hundredth of the loop
    window_s = [0.0] * windows
    window_n = [0] * windows
    wrong_iterations = wrong_total = 0
    first_wrong: int | None = None
    total = 0.0
    iterations = 0
    start = time.perf_counter()
    while True:
        pace = total / iterations if iterations else each
        left = seconds - (time.perf_counter() - start)
        nxt = 0 if left <= 0 else max(1, int(min(left, 1.0) / max(pace, 1e-6)))
        count = torch.tensor([nxt], dtype=torch.int64, device=device)
        dist.broadcast(count, 0)
        chunk = int(count.item())
        if chunk == 0:
            break
        for _ in range(chunk):
            factor = iterations % 7 + 1
            inp.fill_(float((rank + 1) * factor))
            if cuda:
                torch.cuda.synchronize(device)
            began = time.perf_counter()
            dist.all_reduce(inp)
            bad = int((inp != factor * world * (world + 1) / 2).sum().item())  # waits for it
            took = time.perf_counter() - began
            total += took
            slot = min(windows - 1, int((began - start) / seconds * windows))
            window_s[slot] += took
            window_n[slot] += 1
            if bad:
                wrong_iterations += 1
                wrong_total += bad
                first_wrong = iterations if first_wrong is None else first_wrong
            iterations += 1
    return {"bytes": actual, "time_s": total / iterations, "iteration_s": [],
            "iterations": iterations, "seconds": time.perf_counter() - start,
            "windows_s": [t / n for t, n in zip(window_s, window_n, strict=True) if n],
            "wrong": wrong_total, "wrong_iterations": wrong_iterations,
            "first_wrong": first_wrong}


def _payload(nbytes: int) -> str:
    """A payload as people write it: '4 GiB', '1 MiB', '1536 B' (exact multiples only)."""
    for unit, factor in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= factor and nbytes % factor == 0:
            return f"{nbytes // factor} {unit}"
    return f"{nbytes} B"


def sweep_phase(collective: str, size: int, index: int, count: int) -> str:
    """Where a rank of a sweep is, as its hang line says it: "the sweep's 1 MiB all_reduce
    (payload 1 of 3)" (a job of the 4 GiB case sweeps from smaller payloads first: the
    payload is the sweep's, not the case's)."""
    return f"the sweep's {_payload(size)} {collective} (payload {index + 1} of {count})"


class Hang(TypedDict):
    """Where a hung rank was (what it was doing), how long it waited, its bound."""

    phase: str
    waited_s: float
    bound_s: float


class HangLine(TypedDict):
    """What a rank its watchdog ends prints: who it is, where it hung, what RAS said."""

    rank: int
    world: int
    host: str
    backend: str
    collective: str
    hang: Hang
    ras: RasReport


class Watchdog:
    """Ends this rank when it is still measuring `bound_s` after it started, saying where
    (`doing`) and what NCCL's RAS says of the job's ranks (probes/_lib/nccl_ras.py)."""

    def __init__(self, bound_s: float, rank: int, world: int, backend: str,
                 collective: str) -> None:
        self.bound_s, self.began = bound_s, time.monotonic()
        self.rank, self.world, self.backend, self.collective = rank, world, backend, collective
        self.doing = "start"
        self.done = threading.Event()
        if bound_s > 0:
            threading.Thread(target=self._watch, daemon=True).start()

    def report(self) -> HangLine:
        """The line a hung rank prints: where it was, for how long, and RAS's answer."""
        waited = time.monotonic() - self.began
        return {"rank": self.rank, "world": self.world, "host": socket.gethostname(),
                "backend": self.backend, "collective": self.collective,
                "hang": {"phase": self.doing, "waited_s": round(waited, 3),
                         "bound_s": self.bound_s},
                "ras": hang_status(self.backend)}

    def _watch(self) -> None:
        if self.done.wait(self.bound_s):
            return
        print(json.dumps(self.report()), flush=True)
        os._exit(HANG_EXIT)


def join(torch: Any, dist: Any, backend: str) -> Any:
    """This rank's device, its process group joined (exits where NCCL has no GPU)."""
    local = int(os.environ.get("LOCAL_RANK", "0"))
    timeout = datetime.timedelta(seconds=float(os.environ.get("PYTEST_CLUSTER_INIT_TIMEOUT",
                                                              "60")))
    if backend != "nccl":
        dist.init_process_group("gloo", timeout=timeout)
        return torch.device("cpu")
    if not torch.cuda.is_available():
        sys.exit(f"nccl needs CUDA: torch {torch.__version__} sees no GPU on "
                 f"{socket.gethostname()}")
    if local >= torch.cuda.device_count():
        sys.exit(f"LOCAL_RANK {local} but {socket.gethostname()} has "
                 f"{torch.cuda.device_count()} GPU(s)")
    device = torch.device("cuda", local)
    torch.cuda.set_device(device)
    dist.init_process_group("nccl", timeout=timeout, device_id=device)
    return device


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--collective", choices=COLLECTIVES, default="all_reduce")
    parser.add_argument("--sizes", required=True, help="comma-separated payloads in bytes")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--backend", choices=("nccl", "gloo"), default="gloo")
    parser.add_argument("--seconds", type=float, default=0.0,
                        help="all_reduce of the first size for this long, every result "
                             "checked (the stress level), instead of the benchmark")
    parser.add_argument("--hang-bound", type=float, default=0.0,
                        help="seconds after which a rank still measuring is a hang (0: none)")
    args = parser.parse_args(argv)
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    watchdog = Watchdog(args.hang_bound, rank, world, args.backend, args.collective)
    watchdog.doing = "import torch"
    import torch  # noqa: PLC0415 - a node without torch fails here, named by job_node
    import torch.distributed as dist  # noqa: PLC0415

    log = nccl_debug() if args.backend == "nccl" else None
    watchdog.doing = "rendezvous"
    device = join(torch, dist, args.backend)
    results: list[SizeResult] = []
    try:
        sizes = [int(s) for s in args.sizes.split(",") if s]
        if args.seconds > 0:
            watchdog.doing = f"the sustained all_reduce of {sizes[0]} bytes"
            results.append(sustained(torch, dist, sizes[0], args.seconds, args.warmup,
                                     rank, world, device))
            sizes = []
        for index, size in enumerate(sizes):
            watchdog.doing = sweep_phase(args.collective, size, index, len(sizes))
            results.append(measure(torch, dist, args.collective, size, args.warmup,
                                   args.iterations, rank, world, device))
        watchdog.doing = "the process group's end"
    finally:
        dist.destroy_process_group()
    watchdog.done.set()
    info: CollectiveData = {"rank": rank, "world": world, "host": socket.gethostname(),
                            "backend": args.backend, "collective": args.collective,
                            "torch": torch.__version__, "sizes": results}
    if args.backend == "nccl":
        info["device"] = torch.cuda.get_device_name(device)
        info["nccl"] = ".".join(map(str, torch.cuda.nccl.version()))  # type: ignore[no-untyped-call]
        info["nccl_log"] = nccl_lines(log)
    else:
        info["gloo"] = gloo_interface()
    print(json.dumps(info))
    return 0


if __name__ == "__main__":
    sys.exit(main())

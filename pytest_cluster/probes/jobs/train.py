"""A real training loop, one rank of a distributed job (started by job_node).

A small transformer built from torch.nn (token embedding, TransformerEncoder layers, a
linear head) learns next-token prediction on synthetic data, wrapped in
DistributedDataParallel: every step all-reduces the gradients over every rank of every
node, as a training job does. `--warmup` steps, then `--steps` timed steps.

Each step is split so that a slow rank can be told from the ranks that wait for it:

- `forward`: the forward pass and the loss, this rank alone (no collective in it);
- `wait`: a one-element all-reduce right after it: it returns when the last rank has
  finished its forward pass, so its time is how long this rank waited for the slowest
  (plus one small message's latency). A rank with a slow GPU or CPU waits ~0 here while
  the others wait for it;
- `backward`: DDP's backward pass with its gradient all-reduce, overlapped as DDP does
  it (not split: that would change what is measured). Every rank arrives at it together,
  so a slow link shows here on every rank alike: a ring all-reduce moves at its slowest
  link's pace;
- `optimiser`: AdamW's step.

On GPUs each phase ends with a CUDA event that is polled (not a blocking synchronise, so
the heartbeat thread keeps the GIL when a collective hangs). The extra one-element
all-reduce and the synchronisations cost a little overlap: step times are, if anything,
slightly longer than an unmeasured loop's.

After the steps a link probe tells which node's link is slow, which the all-reduce cannot:
in rounds of disjoint pairs (every rank meets every other once, the circle method), each
pair exchanges `--link-bytes` both ways at once, alone on their links, started together
after a one-element all-reduce; the best of two tries counts. A node with a slow link is
slow in every pair it is in, every other node in the one pair it shares with it.

Progress: with PYTEST_CLUSTER_PROGRESS (job_node's --stall-timeout) this rank writes the
step and phase it is in, when it entered it and a heartbeat into that file (atomically,
at every phase change and every beat from a thread), from its first line on: before
torch is imported ("import torch"), in the rendezvous ("rendezvous": init_process_group)
and DDP's setup ("setup", step -1), then in its steps. Its node reads it even when this
process is stopped (SIGSTOP) or frozen, and kills it when the heartbeat stops. The beat
thread also writes the measured steps' times to the same path + ".steps", so a run ended
by its wall clock keeps the steps that ran. A watchdog thread ends this rank when a step
(or link round) runs past `--step-bound` seconds, or the rendezvous and setup past
`--start-bound`: a hang is found by the bound (and a rank frozen before its first step
by its node), never by a store's timeout; over NCCL it first asks the job's RAS service on
this node (probes/_lib/nccl_ras.py) which ranks are dead, missing or behind, and its hang
line carries the answer (`ras`), or why there is none. On NCCL,
TORCH_NCCL_ASYNC_ERROR_HANDLING=1 (unless set) lets a broken communicator end the
process rather than leave it blocked. Prints one JSON line: this rank's step and phase
times, its link exchanges, tokens per step, first and last loss; or, on a hang, the step
and phase it hung in.

Environment from job_node: RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR/PORT,
PYTEST_CLUSTER_INIT_TIMEOUT, PYTEST_CLUSTER_PROGRESS. Needs torch.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import socket
import sys
import threading
import time
from typing import Any, TypedDict

from .._lib.nccl_ras import RasReport, hang_status

#: Model sizes: (layers, width, heads, sequence, batch, vocabulary).
SIZES = {"cpu": (2, 128, 4, 64, 8, 512), "gpu": (4, 1024, 16, 512, 8, 32000)}
#: The link probe's message, per pair and direction.
LINK_BYTES = {"cpu": 1 << 20, "gpu": 64 << 20}
HANG_EXIT = 3
PHASES = ("forward", "wait", "backward", "optimiser")


class Model(TypedDict):
    layers: int
    width: int
    heads: int
    sequence: int
    batch: int
    vocab: int


class Link(TypedDict):
    bytes: int
    exchange_s: dict[str, float]  # partner rank -> seconds (link_probe)


class TrainData(TypedDict, total=False):
    """What a rank prints at the end: who it is, each measured step's seconds and each
    phase's (`PHASES`), the link figures, the losses, the model; `device` on GPUs."""

    rank: int
    world: int
    host: str
    backend: str
    torch: str
    step_s: list[float]
    forward_s: list[float]
    wait_s: list[float]
    backward_s: list[float]
    optimiser_s: list[float]
    tokens_per_step: int
    link: Link
    loss_first: float | None
    loss_last: float | None
    finite: bool
    model: Model
    parameters: int
    device: str
class Hang(TypedDict):
    """The step and phase a rank hung in, how long it waited (in all, in the phase), and
    the bound it passed."""

    step: int
    phase: str
    waited_s: float
    phase_s: float
    bound_s: float


class HangLine(TypedDict):
    """What a rank its watchdog ends prints: who, where it hung, what NCCL's RAS said."""

    rank: int
    host: str
    hang: Hang
    ras: RasReport


#: The most measured steps' times the steps file keeps (the latest).
MAX_KEPT = 4096


class Monitor:
    """This rank's progress (written to its file, with a heartbeat) and its watchdog,
    which ends the process when the step under way runs past the bound."""

    def __init__(self, bound_s: float, rank: int, path: str | None,
                 backend: str = "gloo") -> None:
        self.bound_s = bound_s
        self.rank = rank
        self.backend = backend  # over NCCL a hang asks its RAS which ranks are dead
        self.path = path
        self.lock = threading.Lock()
        self.step, self.phase = -1, "start"
        self.began = self.since = time.monotonic()
        self.since_wall = time.time()
        self.beat_s = max(0.05, min(0.5, bound_s / 4))
        self.limit_s: float | None = None  # the bound of what is under way; None: none
        self.times: dict[str, list[float]] = {}  # the measured steps' (train's `times`)
        self.written = 0  # how many measured steps the steps file has
        self._write()
        threading.Thread(target=self._watch, daemon=True).start()

    def start(self, step: int, phase: str, bound_s: float | None = None) -> None:
        """A new step (or link round, or the rendezvous with `bound_s`), in its first
        phase: the bound counts from here."""
        with self.lock:
            self.step, self.began = step, time.monotonic()
            self.limit_s = self.bound_s if bound_s is None else bound_s
        self.enter(phase)

    def enter(self, phase: str) -> None:
        with self.lock:
            self.phase, self.since, self.since_wall = phase, time.monotonic(), time.time()
            self._write()

    def stop(self, phase: str = "done") -> None:
        with self.lock:
            self.step, self.limit_s = -1, None
        self.enter(phase)

    def _write_steps(self) -> None:
        """The measured steps' times so far, when more were measured (replaced at once)."""
        count = len(self.times.get("step_s", ()))
        if self.path is None or count == self.written:
            return
        temporary = f"{self.path}.steps.{os.getpid()}"
        try:
            with open(temporary, "w", encoding="utf-8") as file:
                json.dump({name: [round(v, 6) for v in values[-MAX_KEPT:]]
                           for name, values in self.times.items()}, file)
            os.replace(temporary, f"{self.path}.steps")
            self.written = count
        except OSError:
            pass  # a run ended by its wall clock then keeps no steps: said so

    def _write(self) -> None:
        """The progress file, replaced at once (the reader never sees half of it)."""
        if self.path is None:
            return
        record = {"rank": self.rank, "step": self.step, "phase": self.phase,
                  "since": self.since_wall, "beat": time.time()}
        temporary = f"{self.path}.{os.getpid()}"
        try:
            with open(temporary, "w", encoding="utf-8") as file:
                json.dump(record, file)
            os.replace(temporary, self.path)
        except OSError:
            pass  # the node's check then sees no beat: it ends this rank, named

    def _watch(self) -> None:
        while True:
            time.sleep(self.beat_s)
            with self.lock:
                self._write()
                self._write_steps()
                waited = time.monotonic() - self.began
                step, phase, limit = self.step, self.phase, self.limit_s
                in_phase = time.monotonic() - self.since
            if limit is not None and waited > limit:
                print(json.dumps(self.hang_line(step, phase, waited, in_phase, limit)),
                      flush=True)
                os._exit(HANG_EXIT)

    def hang_line(self, step: int, phase: str, waited: float, in_phase: float,
                  limit: float) -> HangLine:
        """What this rank prints when its step runs past the bound: where it hung, for how
        long, and what NCCL's RAS says of the job's ranks (or why it cannot say)."""
        return {"rank": self.rank, "host": socket.gethostname(),
                "hang": {"step": step, "phase": phase, "waited_s": round(waited, 3),
                         "phase_s": round(in_phase, 3), "bound_s": limit},
                "ras": hang_status(self.backend)}


def settle(torch: Any, device: Any) -> None:
    """Wait for the device's queued work by polling an event: the GIL stays free for the
    heartbeat thread however long it takes (CPU work is done when its call returns)."""
    if device.type != "cuda":
        return
    event = torch.cuda.Event()
    event.record()
    while not event.query():
        time.sleep(0.0002)


def build(torch: Any, nn: Any, size: tuple[int, ...]) -> Any:
    layers, width, heads, _, _, vocab = size

    class Tiny(nn.Module):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(vocab, width)
            layer = nn.TransformerEncoderLayer(width, heads, 4 * width, dropout=0.0,
                                               batch_first=True)
            self.body = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
            self.head = nn.Linear(width, vocab)

        def forward(self, tokens: Any) -> Any:
            return self.head(self.body(self.embed(tokens)))

    return Tiny()


def start(torch: Any, dist: Any, backend: str) -> Any:
    """This rank's device, with the process group joined."""
    local = int(os.environ.get("LOCAL_RANK", "0"))
    timeout = datetime.timedelta(seconds=float(os.environ.get("PYTEST_CLUSTER_INIT_TIMEOUT",
                                                              "60")))
    if backend == "nccl":
        os.environ.setdefault("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1")
        os.environ.setdefault("NCCL_ASYNC_ERROR_HANDLING", "1")  # its name before torch 2.2
        if not torch.cuda.is_available() or local >= torch.cuda.device_count():
            sys.exit(f"nccl needs a GPU for LOCAL_RANK {local}: torch {torch.__version__} "
                     f"sees {torch.cuda.device_count()} on {socket.gethostname()}")
        device = torch.device("cuda", local)
        torch.cuda.set_device(device)
        dist.init_process_group("nccl", timeout=timeout, device_id=device)
        return device
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // int(
        os.environ.get("LOCAL_WORLD_SIZE", "1"))))
    dist.init_process_group("gloo", timeout=timeout)
    return torch.device("cpu")


class PhaseTimer:
    """One step's phases: each ends when the device is done with it (settle)."""

    def __init__(self, torch: Any, device: Any, monitor: Monitor) -> None:
        self.torch, self.device, self.monitor = torch, device, monitor
        self.mark = time.perf_counter()
        self.seconds: dict[str, float] = {}

    def done(self, phase: str, following: str | None) -> None:
        """`phase` is over (timed); `following` begins (in the progress file)."""
        settle(self.torch, self.device)
        now = time.perf_counter()
        self.seconds[phase], self.mark = now - self.mark, now
        if following is not None:
            self.monitor.enter(following)


def train(torch: Any, dist: Any, ddp: Any, device: Any, size: tuple[int, ...],
          args: argparse.Namespace, rank: int,
          monitor: Monitor) -> tuple[dict[str, list[float]], list[float]]:
    """({'step_s': [...], 'forward_s': ..., 'wait_s': ..., 'backward_s': ...,
    'optimiser_s': ...} over the measured steps, their losses)."""
    _, _, _, sequence, batch, vocab = size
    gpu = device.type == "cuda"
    optimiser = torch.optim.AdamW(ddp.parameters(), lr=1e-3)
    data = torch.Generator(device=device).manual_seed(1000 + rank)  # each rank its own data
    loss_fn = torch.nn.CrossEntropyLoss()
    arrived = torch.zeros(1, device=device)
    times: dict[str, list[float]] = {f"{name}_s": [] for name in ("step", *PHASES)}
    monitor.times = times  # the beat thread writes them as they grow
    losses: list[float] = []
    for step in range(args.warmup + args.steps):
        monitor.start(step, "forward")
        began = time.perf_counter()
        timer = PhaseTimer(torch, device, monitor)
        done = timer.done
        tokens = torch.randint(0, vocab, (batch, sequence + 1), device=device, generator=data)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=gpu):
            logits = ddp(tokens[:, :-1])
            loss = loss_fn(logits.reshape(-1, vocab).float(), tokens[:, 1:].reshape(-1))
        done("forward", "wait")
        dist.all_reduce(arrived)  # returns when the last rank has done its forward pass
        done("wait", "backward")
        optimiser.zero_grad(set_to_none=True)
        loss.backward()  # DDP's gradient all-reduce, overlapped with the backward pass
        done("backward", "optimiser")
        optimiser.step()
        done("optimiser", None)
        if step >= args.warmup:
            for phase in PHASES:  # step_s last: its length says how many are complete
                times[f"{phase}_s"].append(timer.seconds[phase])
            times["step_s"].append(time.perf_counter() - began)
            losses.append(float(loss.detach()))
    return times, losses


def pairings(world: int) -> list[list[tuple[int, int]]]:
    """Rounds of disjoint pairs in which every rank meets every other exactly once (the
    circle method; with an odd count one rank sits each round out)."""
    players: list[int | None] = [*range(world), *([None] if world % 2 else [])]
    count = len(players)
    rounds = []
    for _ in range(count - 1):
        pairs = [(players[i], players[count - 1 - i]) for i in range(count // 2)]
        rounds.append(sorted((min(a, b), max(a, b)) for a, b in pairs
                             if a is not None and b is not None))
        players = [players[0], players[-1], *players[1:-1]]
    return rounds


def link_probe(torch: Any, dist: Any, device: Any, rank: int, world: int, size: int,
               monitor: Monitor) -> dict[str, float]:
    """{partner rank: seconds} to exchange `size` bytes with it both ways at once, the
    best of two tries, each pair alone and started together."""
    send = torch.ones(size // 4, dtype=torch.float32, device=device)
    receive = torch.empty_like(send)
    together = torch.zeros(1, device=device)
    seconds: dict[str, float] = {}
    for index, pairs in enumerate(pairings(world)):
        partner = next((b if a == rank else a for a, b in pairs if rank in (a, b)), None)
        for _ in range(2):
            monitor.start(index, "link probe")  # the round, for the watchdog
            dist.all_reduce(together)
            settle(torch, device)
            if partner is None:
                continue
            began = time.perf_counter()
            for request in dist.batch_isend_irecv([dist.P2POp(dist.isend, send, partner),
                                                   dist.P2POp(dist.irecv, receive,
                                                              partner)]):
                request.wait()
            settle(torch, device)
            took = time.perf_counter() - began
            seconds[str(partner)] = min(took, seconds.get(str(partner), math.inf))
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--step-bound", type=float, default=60.0)
    parser.add_argument("--start-bound", type=float, default=0.0,
                        help="the rendezvous and DDP's setup, seconds (0: --step-bound)")
    parser.add_argument("--backend", choices=("nccl", "gloo"), default="gloo")
    parser.add_argument("--link-bytes", type=int, default=0, help="0: by device")
    args = parser.parse_args(argv)
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    # beating from here on: a rank frozen before its first step is found by its node
    monitor = Monitor(args.step_bound, rank, os.environ.get("PYTEST_CLUSTER_PROGRESS"),
                      args.backend)
    monitor.enter("import torch")
    import torch  # noqa: PLC0415 - a node without torch fails here, named by job_node
    import torch.distributed as dist  # noqa: PLC0415
    from torch.nn.parallel import DistributedDataParallel  # noqa: PLC0415

    monitor.start(-1, "rendezvous", args.start_bound or args.step_bound)
    device = start(torch, dist, args.backend)
    monitor.enter("setup")  # the same bound: DDP's setup broadcasts rank 0's weights
    gpu = device.type == "cuda"
    kind = "gpu" if gpu else "cpu"
    size = SIZES[kind]
    torch.manual_seed(0)  # the same weights everywhere (DDP broadcasts rank 0's anyway)
    model = build(torch, torch.nn, size).to(device)
    ddp = DistributedDataParallel(model, device_ids=[device.index] if gpu else None)
    link_bytes = args.link_bytes or LINK_BYTES[kind]
    try:
        times, losses = train(torch, dist, ddp, device, size, args, rank, monitor)
        link = link_probe(torch, dist, device, rank, world, link_bytes, monitor)
        monitor.start(0, "final barrier")
        dist.barrier()  # every rank past every collective: none waits on another now
        monitor.stop()
    except BaseException:
        dist.destroy_process_group()
        raise
    layers, width, heads, sequence, batch, vocab = size
    info: TrainData = {
        "rank": rank, "world": world, "host": socket.gethostname(), "backend": args.backend,
        "torch": torch.__version__, "step_s": times["step_s"],
        "forward_s": times["forward_s"], "wait_s": times["wait_s"],
        "backward_s": times["backward_s"], "optimiser_s": times["optimiser_s"],
        "tokens_per_step": size[4] * size[3],
        "link": {"bytes": link_bytes, "exchange_s": link},
        # strict JSON: a loss that is not finite is null ("finite" says so)
        "loss_first": losses[0] if losses and math.isfinite(losses[0]) else None,
        "loss_last": losses[-1] if losses and math.isfinite(losses[-1]) else None,
        "finite": all(math.isfinite(v) for v in losses),
        "model": {"layers": layers, "width": width, "heads": heads, "sequence": sequence,
                  "batch": batch, "vocab": vocab},
        "parameters": sum(p.numel() for p in model.parameters())}
    if gpu:
        info["device"] = torch.cuda.get_device_name(device)
    print(json.dumps(info), flush=True)
    # Out at once: tearing DDP's process group down at interpreter exit can abort the
    # process (std::terminate in a gloo thread) after the result is printed, under load
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())

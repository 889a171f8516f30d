"""A real training loop, one rank of a distributed job (started by job_node).

A small transformer built from torch.nn (token embedding, TransformerEncoder layers, a
linear head) learns next-token prediction on synthetic data, wrapped in
DistributedDataParallel: every step all-reduces the gradients over every rank of every
node, as a training job does. `--warmup` steps, then `--steps` timed steps (on GPUs each
step ends with a synchronise). A watchdog ends this rank when a step takes longer than
`--step-bound` seconds: a hang is found by the bound, not by waiting forever. Prints one
JSON line: this rank's step times, tokens per step, first and last loss; or, on a hang,
the step it hung in.

Environment from job_node: RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR/PORT,
PYTEST_CLUSTER_INIT_TIMEOUT. Needs torch.
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
from typing import Any

#: Model sizes: (layers, width, heads, sequence, batch, vocabulary).
SIZES = {"cpu": (2, 128, 4, 64, 8, 512), "gpu": (4, 1024, 16, 512, 8, 32000)}
HANG_EXIT = 3


class Watchdog:
    """Ends the process when the step under way runs past the bound."""

    def __init__(self, bound_s: float, rank: int) -> None:
        self.bound_s = bound_s
        self.rank = rank
        self.step = -1
        self.began = time.monotonic()
        self.lock = threading.Lock()
        threading.Thread(target=self._watch, daemon=True).start()

    def start(self, step: int) -> None:
        with self.lock:
            self.step, self.began = step, time.monotonic()

    def _watch(self) -> None:
        while True:
            time.sleep(min(1.0, self.bound_s / 4))
            with self.lock:
                waited = time.monotonic() - self.began
                step = self.step
            if step >= 0 and waited > self.bound_s:
                print(json.dumps({"rank": self.rank, "host": socket.gethostname(),
                                  "hang": {"step": step, "waited_s": round(waited, 3),
                                           "bound_s": self.bound_s}}), flush=True)
                os._exit(HANG_EXIT)


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


def train(torch: Any, ddp: Any, device: Any, size: tuple[int, ...], args: argparse.Namespace,
          rank: int) -> tuple[list[float], list[float]]:
    """(step times, losses) of the measured steps."""
    _, _, _, sequence, batch, vocab = size
    gpu = device.type == "cuda"
    optimiser = torch.optim.AdamW(ddp.parameters(), lr=1e-3)
    data = torch.Generator(device=device).manual_seed(1000 + rank)  # each rank its own data
    loss_fn = torch.nn.CrossEntropyLoss()
    watchdog = Watchdog(args.step_bound, rank)
    times: list[float] = []
    losses: list[float] = []
    for step in range(args.warmup + args.steps):
        watchdog.start(step)
        began = time.perf_counter()
        tokens = torch.randint(0, vocab, (batch, sequence + 1), device=device, generator=data)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=gpu):
            logits = ddp(tokens[:, :-1])
            loss = loss_fn(logits.reshape(-1, vocab).float(), tokens[:, 1:].reshape(-1))
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        optimiser.step()
        value = float(loss.detach())  # waits for the step, on GPUs too
        if gpu:
            torch.cuda.synchronize(device)
        if step >= args.warmup:
            times.append(time.perf_counter() - began)
            losses.append(value)
    watchdog.start(-1)
    return times, losses


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--step-bound", type=float, default=60.0)
    parser.add_argument("--backend", choices=("nccl", "gloo"), default="gloo")
    args = parser.parse_args(argv)
    import torch  # noqa: PLC0415 - a node without torch fails here, named by job_node
    import torch.distributed as dist  # noqa: PLC0415
    from torch.nn.parallel import DistributedDataParallel  # noqa: PLC0415

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    device = start(torch, dist, args.backend)
    gpu = device.type == "cuda"
    size = SIZES["gpu" if gpu else "cpu"]
    torch.manual_seed(0)  # the same weights everywhere (DDP broadcasts rank 0's anyway)
    model = build(torch, torch.nn, size).to(device)
    ddp = DistributedDataParallel(model, device_ids=[device.index] if gpu else None)
    try:
        times, losses = train(torch, ddp, device, size, args, rank)
        dist.barrier()  # every rank past every collective: none waits on another now
    except BaseException:
        dist.destroy_process_group()
        raise
    info: dict[str, Any] = {
        "rank": rank, "world": world, "host": socket.gethostname(), "backend": args.backend,
        "torch": torch.__version__, "step_s": times, "tokens_per_step": size[4] * size[3],
        "loss_first": losses[0] if losses else None, "loss_last": losses[-1] if losses else None,
        "finite": all(math.isfinite(v) for v in losses),
        "model": dict(zip(("layers", "width", "heads", "sequence", "batch", "vocab"), size,
                          strict=True)),
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

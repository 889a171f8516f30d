"""`make gpu-check`: every GPU path of pytest-cluster on this machine, in one command, each
figure beside an independent reference measured in the same run (issue 29).

On a machine with CUDA (one H100 or H200 in at most 8 minutes):

1. The GPUs are read through NVML; the spec is the example for their model
   (examples/h100-single.yaml, examples/h200-single.yaml) with the GPU count found, a short
   `load_time` and `stress_time`, and a training section (one rank on NCCL).
2. The contract suite runs through the local launcher, as a user runs it, twice: the
   default level, then the stress level's own cases (`-m "stress and not (sanity or
   acceptance)"`: the stress loop and the silent-data-corruption check).
   With two GPUs or more, the training loop runs again on two ranks, and the interconnect
   section is added. Each run's evidence is signed with a throwaway Ed25519 key and checked
   with `pytest-cluster verify`; it stays in --out for inspection.
3. The references, in the same process after the suite: plain torch loops (the matmul
   and copy of bench/gpu_fidelity.py, pinned host copies, allocation until out of memory)
   and the published figure of that model (reference.py, as each result line records it).
4. nccl-tests, when built (`--nccl-tests DIR`, or /opt/nccl-tests/build): all_reduce_perf
   through our probe with `-g 1` (one GPU per process), read by our parser.
5. bench/gpu_fidelity.py, as it runs on its own.

Then one table (each figure: ours, the plain torch loop, the ratio, the published figure,
the ratio, the case's outcome) and `name=value` lines, the last `gpu_check_ratio=` (the
lowest ratio of ours to the plain torch loop).

Without CUDA it says so in one line and exits 0 (CI runs it so). `--simulate MODEL` runs
steps 1, 2 and the table on the simulated launcher instead (no torch loop), for the tests.

    python bench/gpu_check.py [--out gpu-check] [--nccl-tests DIR] [--budget 480]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
#: The example spec of each model this check knows.
EXAMPLES = {"H100-SXM-80GB": ROOT / "examples" / "h100-single.yaml",
            "H200-SXM-141GB": ROOT / "examples" / "h200-single.yaml"}
STRESS_TIME = "30 s"
LOAD_TIME = "10 s"
TRAINING_STEPS = 20
NCCL_TESTS = Path("/opt/nccl-tests/build")
GB, TB, TFLOPS = 1e9, 1e12, 1e12


# -- what is here ------------------------------------------------------------------------------

def no_cuda() -> str | None:
    """Why this machine cannot run the check (one line), or None when it can."""
    try:
        import torch  # noqa: PLC0415 - a node's dependency, not the controller's
    except ImportError:
        return "gpu-check: no torch here: nothing to check (it needs torch with CUDA)"
    if not torch.cuda.is_available():
        return (f"gpu-check: no CUDA here (torch {torch.__version__} sees no GPU): "
                "nothing to check")
    return None


@dataclass(frozen=True)
class Gpus:
    count: int
    nvml_name: str
    model: str | None  # gpu_models' key, None for a model with no entry


def detect() -> Gpus:
    """This machine's GPUs, through NVML (the first one's name)."""
    import pynvml  # type: ignore[import-untyped]  # noqa: PLC0415

    from pytest_cluster.contract.sections.gpu_models import model_of_nvml_name  # noqa: PLC0415

    pynvml.nvmlInit()
    try:
        count = pynvml.nvmlDeviceGetCount()
        name = pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(0))
    finally:
        pynvml.nvmlShutdown()
    name = name.decode() if isinstance(name, bytes) else str(name)
    found = model_of_nvml_name(name)
    return Gpus(int(count), name, found.key if found is not None else None)


# -- the spec ----------------------------------------------------------------------------------

def check_spec(model: str, count: int, *, simulate: bool = False,
               nccl_tests: Path | None = None, training_ranks: int | None = 1) -> str:
    """The spec the suite runs on: the model's example with `count` GPUs, a short load
    and stress, and (`training_ranks`) a training loop on NCCL; with `simulate`, on the
    simulated launcher (which has no training)."""
    document: dict[str, Any] = yaml.safe_load(EXAMPLES[model].read_text(encoding="utf-8"))
    document["cluster"]["name"] = f"gpu-check-{model}"
    gpus = document["gpus"]
    gpus.update(count=count, load_time=LOAD_TIME, stress_time=STRESS_TIME)
    if count >= 2:
        gpus.pop("nvlink", None)  # its peers are there to check
        document["interconnect"] = {
            "intra_node": {"kind": "nvlink", "rate": "450 GB/s"},
            "payloads": ["1 GiB"], "busbw": ">= 50%", "ranks_per_node": count,
            **({"engine": "nccl-tests", "nccl_tests": str(nccl_tests)}
               if nccl_tests is not None else {})}
    if simulate:
        document["cluster"]["launcher"] = "sim"
        document["sim"] = {"gpu_model": model, "gpus_per_node": count}
    elif training_ranks:
        document["training"] = {"steps": TRAINING_STEPS, "ranks_per_node": training_ranks,
                                "backend": "nccl"}
    return yaml.safe_dump(document, sort_keys=False)


# -- the suite ---------------------------------------------------------------------------------

@dataclass
class SuiteRun:
    name: str
    exit_code: int | str  # "timeout" when it ran out of time
    seconds: float
    run_dir: Path | None
    records: list[dict[str, Any]] = field(default_factory=list)
    verified: str = ""  # pytest-cluster verify's verdict line

    @property
    def counts(self) -> dict[str, int]:
        found: dict[str, int] = {}
        for record in self.records:
            found[str(record.get("outcome"))] = found.get(str(record.get("outcome")), 0) + 1
        return found


def pytest_argv(spec: Path, reports: Path, key: Path, *selection: str) -> list[str]:
    return [sys.executable, "-m", "pytest", f"--cluster={spec}", f"--cluster-reports={reports}",
            f"--cluster-sign-key={key}", "-p", "no:cacheprovider", "-q", *selection]


def run_suite(name: str, argv: Sequence[str], reports: Path, timeout_s: float,
              work: Path, public_key: Path) -> SuiteRun:
    """One run of the suite as a user runs it; its result lines, and verify's word."""
    started = time.monotonic()
    log = work / f"{name}.log"
    try:
        with log.open("w", encoding="utf-8") as out:
            done = subprocess.run(argv, cwd=work, stdout=out, stderr=subprocess.STDOUT,
                                  timeout=max(timeout_s, 1), check=False)
        code: int | str = done.returncode
    except subprocess.TimeoutExpired:
        code = "timeout"
    seconds = time.monotonic() - started
    latest = reports / "latest"
    run_dir = latest.resolve() if latest.exists() else None
    found = SuiteRun(name, code, seconds, run_dir)
    if run_dir is None or not (run_dir / "results.jsonl").is_file():
        return found
    with (run_dir / "results.jsonl").open(encoding="utf-8") as lines:
        found.records = [r for r in map(json.loads, lines) if r.get("type") == "result"]
    verify = subprocess.run([sys.executable, "-m", "pytest_cluster.cli", "verify",
                             str(run_dir), "--key", str(public_key)], capture_output=True,
                            text=True, check=False, timeout=120)
    said = verify.stdout.strip().splitlines() or [f"exit {verify.returncode}, said nothing"]
    found.verified = said[-1]  # its verdict: VERIFIED: FILES MATCH, SIGNED BY ...
    return found


def throwaway_key(work: Path) -> tuple[Path, Path]:
    """An Ed25519 key pair made for this check alone (private, public) as PEM files."""
    from cryptography.hazmat.primitives import serialization  # noqa: PLC0415
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (  # noqa: PLC0415
        Ed25519PrivateKey,
    )

    key = Ed25519PrivateKey.generate()
    private, public = work / "throwaway-key.pem", work / "throwaway-key.pub.pem"
    private.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                          serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
    private.chmod(0o600)
    public.write_bytes(key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    return private, public


# -- the references ----------------------------------------------------------------------------

def plain_references(dtypes: Iterable[str], stop: Callable[[], bool]) -> dict[str, float]:
    """The plain torch loops on GPU 0, in base units, by clause key; a loop skipped once
    `stop()` says time is up."""
    import gpu_fidelity  # noqa: PLC0415 - bench/gpu_fidelity.py, beside this script
    import torch  # noqa: PLC0415

    found: dict[str, float] = {}
    torch.cuda.set_device(0)
    for dtype in dtypes:
        if dtype in ("bf16", "fp16", "tf32", "fp32") and not stop():
            found[f"gpus.matmul.{dtype}"] = gpu_fidelity.plain_matmul(
                torch, dtype, 8192, 50) * TFLOPS
    if not stop():
        found["gpus.memory_bandwidth"] = gpu_fidelity.plain_copy(torch, 2 * 2**30, 20)
    if not stop():
        found["gpus.h2d"], found["gpus.d2h"] = plain_host_copies(torch)
    found["gpus.memory"] = float(torch.cuda.get_device_properties(0).total_memory)
    if not stop():
        found["gpus.usable_memory"] = plain_allocation(torch)
    torch.cuda.empty_cache()
    return found


def plain_host_copies(torch: Any, nbytes: int = 256 * 2**20, rounds: int = 20,
                      ) -> tuple[float, float]:
    """bytes/s host-to-device and device-to-host: pinned memory, CUDA events around the
    whole loop."""
    host = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
    device = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    rates = []
    for target, source in ((device, host), (host, device)):
        target.copy_(source, non_blocking=True)
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(rounds):
            target.copy_(source, non_blocking=True)
        end.record()
        torch.cuda.synchronize()
        rates.append(nbytes * rounds / (start.elapsed_time(end) / 1e3))
    return rates[0], rates[1]


def plain_allocation(torch: Any) -> float:
    """The share of the GPU's total memory torch allocates: 1 GiB blocks until out of
    memory, then halving to 2 MiB; all freed."""
    total = torch.cuda.get_device_properties(0).total_memory
    held, size = [], 2**30
    while size >= 2 * 2**20:
        try:
            held.append(torch.empty(size, dtype=torch.uint8, device="cuda"))
        except torch.cuda.OutOfMemoryError:
            size //= 2
    got = sum(block.numel() for block in held)
    del held
    torch.cuda.empty_cache()
    return float(got / total)


def nccl_tests_row(folder: Path, timeout_s: float) -> dict[str, Any]:
    """all_reduce_perf with -g 1 through our probe and parser: its largest payload's
    figures, or why not."""
    from pytest_cluster.measure.network import nccl_tests  # noqa: PLC0415
    from pytest_cluster.probes import nccl_tests as probe  # noqa: PLC0415

    words = nccl_tests.probe_args(str(folder), "all_reduce", [2**20, 2**30], 1, 5, 20,
                                  timeout_s)
    answer = probe.measure(dict(zip(words[::2], words[1::2], strict=True)))
    if "error" in answer:
        return {"error": answer["error"]}
    last = answer["runs"][-1]
    if last["exit_code"] != 0:
        return {"error": f"exit {last['exit_code']}: {last['stderr_tail'][-300:]}"}
    try:
        report = nccl_tests.parse(last["stdout"], json.dumps(last["json"]) if last["json"]
                                  else None)
    except ValueError as exc:
        return {"error": f"its output does not read: {exc}"}
    if not report.rows:
        return {"error": "its table has no row"}
    row = max(report.rows, key=lambda r: r.bytes)
    side = row.out_of_place or row.in_place
    return {"bytes": row.bytes, "algbw": side.algbw if side else math.nan,
            "busbw": row.busbw, "wrong": row.wrong, "source": report.source,
            "version": report.version}


def fidelity(timeout_s: float) -> float:
    """bench/gpu_fidelity.py's `ratio=`, run as it runs on its own (nan if it did not)."""
    try:
        done = subprocess.run([sys.executable, str(ROOT / "bench" / "gpu_fidelity.py")],
                              capture_output=True, text=True, timeout=max(timeout_s, 1),
                              check=False)
    except subprocess.TimeoutExpired:
        return math.nan
    for line in reversed(done.stdout.splitlines()):
        if line.startswith("ratio="):
            return float(line.split("=", 1)[1])
    return math.nan


# -- the table ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Row:
    figure: str
    unit: str
    ours: float | None  # in the unit shown
    plain: float | None
    published: float | None
    outcome: str

    @property
    def vs_plain(self) -> float | None:
        return self.ours / self.plain if self.ours is not None and self.plain else None

    @property
    def vs_published(self) -> float | None:
        return (self.ours / self.published if self.ours is not None and self.published
                else None)


#: A unit's size in base units (the others are shown as recorded: C, W, counts).
SCALES = {"TFLOPS": TFLOPS, "TB/s": TB, "GB/s": GB, "GB": GB, "%": 0.01}


def numeric(record: dict[str, Any]) -> bool:
    """A GPU's (or the node's GPUs', or the training loop's) figure: a row of the table."""
    return (str(record.get("spec_key", "")).startswith(("gpus.", "training."))
            and isinstance(record.get("measured_base"), (int, float))
            and not isinstance(record.get("measured_base"), bool))


def rows_of(records: Sequence[dict[str, Any]], plain: dict[str, float]) -> list[Row]:
    """One row per numeric clause: its worst case's figure (the lowest of a `>=`, the
    highest of a `<=`; the outcome the worst of the clause's), beside the plain loop and
    the published figure."""
    by_clause: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        if numeric(record):
            by_clause.setdefault(str(record["spec_key"]), []).append(record)
    rows = []
    for key, mine in by_clause.items():
        pick = max if str(mine[0].get("comparison", ">=")).startswith("<") else min
        worst = pick(mine, key=lambda r: float(r["measured_base"]))
        unit = str(worst.get("unit") or "")
        scale = SCALES.get(unit, 1.0)
        ratio = worst.get("reference_ratio")
        ours = float(worst["measured_base"]) / scale
        published = ours / float(ratio) if isinstance(ratio, (int, float)) and ratio else None
        outcomes = {str(r.get("outcome")) for r in mine}
        outcome = next((o for o in ("error", "failed", "skipped") if o in outcomes), "passed")
        rows.append(Row(key, unit, ours, plain[key] / scale if key in plain else None,
                        published, outcome))
    return rows


def _shown(value: float | None, digits: int = 1) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:,.{digits}f}"


def table(rows: Sequence[Row]) -> list[str]:
    head = (f"{'figure':<24} {'unit':<7} {'ours':>10} {'torch loop':>10} {'ratio':>6} "
            f"{'published':>10} {'ratio':>6}  outcome")
    lines = [head, "-" * len(head)]
    for row in rows:
        lines.append(f"{row.figure:<24} {row.unit:<7} {_shown(row.ours):>10} "
                     f"{_shown(row.plain):>10} {_shown(row.vs_plain, 2):>6} "
                     f"{_shown(row.published):>10} {_shown(row.vs_published, 2):>6}  "
                     f"{row.outcome}")
    return lines


def name(figure: str) -> str:
    return figure.removeprefix("gpus.").replace(".", "_")


def suites(gpus: Gpus, spec: Path, work: Path, keys: tuple[Path, Path],
           left: Callable[[], float], simulate: bool) -> list[SuiteRun]:
    """The suite at the default level, then the stress level; with two GPUs or more, the
    training loop again on two ranks."""
    private, public = keys
    runs = [run_suite("default", pytest_argv(spec, work / "default", private),
                      work / "default", min(left() * 0.45, 240), work, public)]
    # the stress level's own cases: -m stress alone would run the default level's again
    runs.append(run_suite("stress", pytest_argv(spec, work / "stress", private, "-m",
                                                "stress and not (sanity or acceptance)"),
                          work / "stress", min(left() * 0.5, 150), work, public))
    if gpus.count >= 2 and not simulate and gpus.model is not None:
        two = work / "spec-2-ranks.yaml"
        two.write_text(check_spec(gpus.model, gpus.count, training_ranks=2), encoding="utf-8")
        runs.append(run_suite("training-2", pytest_argv(two, work / "training-2", private,
                                                         "-k", "training"),
                              work / "training-2", min(left() * 0.3, 90), work, public))
    return runs


def said(runs: Sequence[SuiteRun], records: Sequence[dict[str, Any]], rows: Sequence[Row],
         nccl: dict[str, Any] | None) -> None:
    """Each run's line, the table, the other cases, nccl-tests' line, and the figures'
    `name=value` lines."""
    for run in runs:
        counts = ", ".join(f"{n} {k}" for k, n in sorted(run.counts.items()))
        print(f"{run.name}: exit {run.exit_code} in {run.seconds:.0f} s; {counts or 'no cases'};"
              f" {run.run_dir or 'no evidence'}; verify: {run.verified or '-'}")
    print("\n".join(table(rows)))
    others = sorted({f"{r.get('spec_key')}: {r.get('outcome')}" for r in records
                     if not numeric(r)})
    print("other cases: " + "; ".join(others))
    if nccl is not None:
        print("nccl-tests all_reduce_perf -g 1: " + (
            nccl["error"] if "error" in nccl else
            f"{nccl['bytes']} B: algbw {nccl['algbw'] / GB:.1f} GB/s, busbw "
            f"{nccl['busbw'] / GB:.1f} GB/s (1 rank: no bus traffic), {nccl['wrong']} wrong, "
            f"read from its {nccl['source']} (nccl-tests {nccl['version'] or '?'})"))
    for row in rows:
        if row.vs_plain is not None:
            print(f"{name(row.figure)}_vs_torch={row.vs_plain:.3f}")
        if row.vs_published is not None:
            print(f"{name(row.figure)}_vs_published={row.vs_published:.3f}")
    print(f"cases={len(records)}")
    print(f"failed_cases={sum(1 for r in records if r.get('outcome') in ('failed', 'error'))}")
    print(f"signed_and_verified={sum(run.verified.startswith('VERIFIED') for run in runs)}"
          f"/{len(runs)}")


# -- the check ---------------------------------------------------------------------------------

def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("gpu-check"),
                        help="where the runs' evidence and logs go (default ./gpu-check)")
    parser.add_argument("--nccl-tests", type=Path, default=None,
                        help=f"nccl-tests' build folder (default {NCCL_TESTS} if it exists)")
    parser.add_argument("--budget", type=float, default=480,
                        help="seconds for the whole check (default 480)")
    parser.add_argument("--simulate", metavar="MODEL", choices=sorted(EXAMPLES),
                        help="the suite on the simulated launcher: no GPU, no torch loop")
    args = parser.parse_args(argv)
    started = time.monotonic()

    budget = float(args.budget)

    def left() -> float:
        return budget - (time.monotonic() - started)

    if args.simulate is None:
        why = no_cuda()
        if why is not None:
            print(why)
            return 0
        gpus = detect()
    else:
        gpus = Gpus(1, args.simulate, args.simulate)
    if gpus.model not in EXAMPLES:
        print(f"gpu-check: no example spec for {gpus.nvml_name!r} "
              f"(known: {', '.join(EXAMPLES)}); the suite is not run")
        return 1
    work = args.out.resolve()
    work.mkdir(parents=True, exist_ok=True)
    private, public = throwaway_key(work)
    nccl_folder = args.nccl_tests or (NCCL_TESTS if NCCL_TESTS.is_dir() else None)
    spec = work / "spec.yaml"
    spec.write_text(check_spec(gpus.model, gpus.count, simulate=args.simulate is not None,
                               nccl_tests=nccl_folder if gpus.count >= 2 else None),
                    encoding="utf-8")
    print(f"gpu-check: {gpus.count} x {gpus.nvml_name} ({gpus.model}); spec {spec}; "
          f"evidence under {work}", flush=True)
    runs = suites(gpus, spec, work, (private, public), left, args.simulate is not None)
    records = [r for run in runs for r in run.records]
    plain: dict[str, float] = {}
    nccl: dict[str, Any] | None = None
    ratio_fidelity = math.nan
    if args.simulate is None:
        dtypes = sorted(key.removeprefix("gpus.matmul.") for key in
                        {str(r.get("spec_key")) for r in records}
                        if key.startswith("gpus.matmul."))
        plain = plain_references(dtypes, lambda: left() < 60)
        if nccl_folder is not None and left() > 60:
            nccl = nccl_tests_row(nccl_folder, min(left() - 45, 120))
        if left() > 30:
            ratio_fidelity = fidelity(left() - 10)
    rows = rows_of(records, plain)
    said(runs, records, rows, nccl)
    print(f"gpu_fidelity_ratio={ratio_fidelity:.3f}")
    print(f"gpu_check_s={time.monotonic() - started:.0f}")
    ratios = [ratio for ratio in (row.vs_plain for row in rows) if ratio is not None]
    print(f"gpu_check_ratio={min(ratios) if ratios else math.nan:.3f}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())

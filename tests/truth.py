"""The ground-truth oracle: a simulated cluster whose faults we chose, run as a user runs it,
and its verdict held to what really happened.

The consistency oracle (tests/oracle.py) finds two views that disagree; this one finds a
verdict that is not so. The simulator plays the faults a scenario puts on its nodes, so the
truth is known before the run: which node carries which fault and which clause of the
contract that fault breaks. After the run, `violations` lists every sentence of the
verdict that the truth contradicts:

- a fault the contract covers at the run's level rejects its node, naming one of the
  clauses it breaks (a dead node is UNREACHABLE instead);
- a node is rejected only for a clause one of its own faults explains: no healthy node is
  ever REJECTED, UNREACHABLE or drained, whatever its neighbours, partners or peers do,
  and every healthy node in scope is ACCEPTED;
- a run that did not run every selected check is never PASS: an interrupted run exits 2,
  INCOMPLETE, and the gate does not say PASS;
- the gate drains exactly the nodes the verdict rejects or did not reach, all faulty;
- every view agrees (the consistency oracle runs on every scenario).

A scenario is made from a seed (`scenario(seed)`), so a failing one is replayed exactly:
`python bench/truth.py --seed N`. tests/test_truth.py runs a bounded number in CI;
bench/truth.py runs thousands and ends `scenarios=N violations=0`.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from pytest_cluster.contract.clauses import declared
from tests.oracle import check

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
#: The levels, lowest first: a run at a level runs that level and every level below it.
LEVELS = ("sanity", "acceptance", "stress")
#: The level a run without -m covers.
DEFAULT_LEVEL = "acceptance"


@dataclass(frozen=True)
class Truth:
    """What one kind of fault does to the contract: `must` are the clauses of which at
    least one fails on the faulty node (the fault's own clause; by level, the lowest that
    sees it); `explains` every clause it may fail besides (its effects on the node's other
    figures). `relative`: seen only against the node's peers (a slow link, a far node, a
    slow storage client), so it is decided only where peers can single it out."""

    must: tuple[str, ...]
    explains: tuple[str, ...] = ()
    relative: bool = False
    down: bool = False
    per_gpu: bool = True
    #: it changes what the node's other checks can run (a GPU missing: the node's jobs
    #: fail on their own), so the node's other faults need not be named besides it
    masks: bool = False
    #: a lie (the sim's `lies`): the node claims what it did not measure, so its failure
    #: of a `must` clause is its bad output (results.jsonl's error_kind), never a figure
    #: that merely missed its promise
    lie: bool = False
    #: judged against its peers' storage figures: decided only where at least this many
    #: nodes in scope (its own included) report honest ones (no lie about storage, not
    #: down): a lying peer's figures are no witness, and two nodes whose files the other
    #: does not find cannot tell whose mount is missing
    witnesses: int = 0


_NODE_NETWORK = "interconnect.busbw[node_network]"
_INTRA = "interconnect.busbw[intra_node]"
_KEEPS_UP = "storage.checkpoint.keeps_up"
_LOADER_KEEPS_UP = "storage.dataloader.keeps_up"
#: golden-config drift: a node's VBIOS, firmware, PCIe links against the nodes' majority
_GOLDEN = "host.golden"
#: every clause of the GPUs (a node short of a GPU, or with another model, fails them)
_GPUS = "gpus.*"
#: Every fault a scenario may inject on the richest example, and its truth. The faults'
#: own keys are the simulator's (contract/sections/sim.py); the clauses are the contract's.
FAULTS: dict[str, Truth] = {
    "bandwidth_factor: 0.7": Truth(("gpus.memory_bandwidth",),
                                   ("gpus.p2p", _INTRA, _NODE_NETWORK)),
    "matmul_factor: 0.6": Truth(("gpus.matmul",)),
    "xid: 79": Truth(("gpus.xid",)),
    "temperature: 95 C": Truth(("gpus.temperature",)),
    "nvlinks_down: 2": Truth(("gpus.nvlink",), ("gpus.p2p", _INTRA, _NODE_NETWORK)),
    "nvlinks_down: 18": Truth(("gpus.nvlink",), ("gpus.p2p", _INTRA, _NODE_NETWORK)),
    "ecc_uncorrected: 2": Truth(("gpus.ecc_uncorrected",)),
    "throttle: hw_slowdown": Truth(("gpus.throttle", "gpus.stress_throttle"),
                                   ("gpus.matmul", "gpus.memory_bandwidth")),
    "sdc: true": Truth(("gpus.sdc",)),
    # a dead rank (NCCL RAS names it DEAD): every collective job over its node hangs, its
    # node named by RAS; what those jobs would have measured of its other faults is lost
    "nccl_dead: true": Truth((_INTRA,), ("interconnect.busbw[inter_node]", _NODE_NETWORK,
                                         "interconnect.transport",
                                         "interconnect.stress_loop"), masks=True),
    "row_remap_pending: true": Truth(("gpus.row_remap",)),
    "model: H100-PCIe-80GB": Truth(("gpus.model",), (_GPUS, _INTRA, _NODE_NETWORK, _GOLDEN)),
    "memory_held: 9 GiB": Truth(("gpus.usable_memory",)),
    "pcie_gen: 4": Truth(("gpus.pcie",), ("gpus.h2d", "gpus.d2h", _GOLDEN)),
    # another VBIOS than the other nodes' GPUs: only the nodes' majority says which is odd
    "vbios: 96.00.89.00.01": Truth((_GOLDEN,), relative=True),
    # DCGM's diagnostic (trial-sim: dcgm_diag r1, whose software test reads the InfoROM)
    "dcgm_fail: software": Truth(("gpus.dcgm_diag",)),
    "down: true": Truth((), down=True, per_gpu=False),
    "gpus: 7": Truth(("gpus.count",), (_GPUS, _INTRA, _NODE_NETWORK, _GOLDEN), per_gpu=False,
                     masks=True),
    "link_factor: 0.5": Truth((_NODE_NETWORK,), ("fabric.rate",), relative=True,
                              per_gpu=False),
    "nic: 2, nic_down: true": Truth(("fabric.ports",), (_NODE_NETWORK,), per_gpu=False),
    "nic: 5, nic_rate: 200 Gb/s": Truth(("fabric.rate",), (_NODE_NETWORK,),
                                        per_gpu=False),
    # the same firmware on every node: of two nodes, nothing says which one differs
    "nic: 0, nic_firmware: 28.36.1010": Truth(("fabric.same_firmware",), (_GOLDEN,),
                                              relative=True, per_gpu=False),
    "nic: 1, nic_link_downed: 3": Truth(("fabric.counters",), per_gpu=False),
    # a card at x8, or in a Gen4 slot: its PCIe link below its maximum (the sim keeps the
    # port's rate: a narrow link is found by its link, not by a slower all_reduce), and
    # unlike the other nodes' links (the golden configuration's)
    "nic: 4, nic_pcie_width: 8": Truth(("fabric.pcie",), (_GOLDEN,), per_gpu=False),
    "nic: 7, nic_pcie_gen: 4": Truth(("fabric.pcie",), (_GOLDEN,), per_gpu=False),
    # the node's NICs SR-IOV virtual functions (a VM's): fabric.pcie cannot read their
    # link, the host's: NOT CHECKED, never failed; unlike its peers' links (golden's)
    "nic_virtual: true": Truth((), (_GOLDEN,), per_gpu=False),
    "latency_factor: 3": Truth(("interconnect.colocation",), ("interconnect.latency",),
                               relative=True, per_gpu=False),
    "storage_factor: 0.5": Truth(("storage.checkpoint.write", "storage.checkpoint.keeps_up",
                                  "storage.dataloader.keeps_up"),
                                 ("storage.checkpoint.read", "storage.dataloader.metadata",
                                  "storage.dataloader.iops"), per_gpu=False, witnesses=2),
    "storage_corrupt: true": Truth(("storage.checkpoint.read", "storage.checkpoint.keeps_up"),
                                   per_gpu=False),
    "storage_unmounted: true": Truth(("storage.shared", "storage.checkpoint.keeps_up",
                                      "storage.dataloader.keeps_up"), ("storage.*",),
                                     per_gpu=False, witnesses=3),
    # lies (the sim's `lies`): the node reports what it did not measure; each is found out
    # as that node's bad output, and never enters a median that judges an honest node
    "lies: storage_bytes": Truth((_KEEPS_UP, _LOADER_KEEPS_UP), per_gpu=False, lie=True),
    "lies: storage_seconds": Truth((_KEEPS_UP, _LOADER_KEEPS_UP), per_gpu=False, lie=True),
    "lies: read_back": Truth(("storage.checkpoint.read", _KEEPS_UP), per_gpu=False,
                             lie=True),
    "lies: cores": Truth(("host.cpu_cores",), per_gpu=False, lie=True),
    # one port's answer refused: the node's every port clause with it
    # its NIC probe's answer is refused whole: the ports' firmware and links golden compares
    # with too
    "lies: counters": Truth(("fabric.counters",), ("fabric.*", "host.golden"), per_gpu=False,
                            lie=True),
    "lies: busbw": Truth((_INTRA,), per_gpu=False, lie=True),
    "lies: gpu_figures": Truth(("gpus.matmul",), per_gpu=False, lie=True),
    # faults this contract does not cover: their node must not be rejected for them
    "transport: socket": Truth((), per_gpu=False),
    "gdr: false": Truth((), per_gpu=False),
    "nic: 6, nic_symbol_errors: 5000": Truth((), per_gpu=False),
    "replaced: true": Truth(()),
    # a configuration finding of DCGM's (persistence mode off): its case is an ERROR, the
    # node never REJECTED nor drained for it (nothing it must fail; failing gpus.dcgm_diag
    # is no clause it explains)
    "dcgm_config: persistence_mode": Truth((), per_gpu=False),
}
#: The contract: the richest example (trial-sim: hosts, 8 H100 per node, NVLink and
#: InfiniBand, the NICs) with a latency bound and colocation, and a shared filesystem's
#: checkpoint burst, as tests/test_oracle.py's random faults use it.
SHARED_STORAGE = """\
storage:
  - path: /shared
    shared: true
    checkpoint: {size_per_gpu: 1 GiB, write: ">= 2 GB/s per GPU", read: ">= 50 GB/s"}
    dataloader: {iops: ">= 60 kIOPS per node", metadata: ">= 100000 ops/s", duration: 5 s}
"""


#: A soak's case of a figure's steadiness over the rounds: soak.stability[<its clause>].
STEADY = "soak.stability["


def clause_base(name: str) -> str:
    """A failed clause's declared name: `gpus.matmul.bf16` is `gpus.matmul`'s member,
    `storage[/shared].checkpoint.read` is `storage.checkpoint.read` of one filesystem,
    `interconnect.busbw[node_network]` is itself."""
    parts = re.sub(r"^storage\[[^\]]*\]", "storage", name).split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        try:
            declared(candidate)
        except KeyError:
            continue
        return candidate
    return name


def level_of(clause: str) -> str:
    """A clause's level (its declaration's), by its declared name."""
    base = clause_base(clause)
    try:
        return declared(base).level
    except KeyError:
        return DEFAULT_LEVEL


def _matches(failed: str, wanted: str) -> bool:
    """Whether a failed clause is the wanted one (`gpus.*`: any of the section's); a
    soak's steadiness of a figure is that figure's clause."""
    if failed.startswith(STEADY) and failed.endswith("]"):
        return _matches(failed[len(STEADY):-1], wanted)
    if wanted.endswith(".*"):
        return clause_base(failed).startswith(wanted[:-1])
    return failed == wanted or failed.startswith(wanted + ".") \
        or clause_base(failed) == wanted


@dataclass(frozen=True)
class Injected:
    node: str
    gpu: int | None
    fault: str
    #: in a soak, the rounds the fault is on (from_round, until_round: None, to the end)
    rounds: tuple[int, int | None] | None = None

    @property
    def truth(self) -> Truth:
        return FAULTS[self.fault]

    def yaml(self) -> str:
        gpu = f" gpu: {self.gpu}," if self.gpu is not None else ""
        rounds = ""
        if self.rounds is not None:
            rounds = f", from_round: {self.rounds[0]}" + (
                f", until_round: {self.rounds[1]}" if self.rounds[1] is not None else "")
        return f"    - {{node: {self.node},{gpu} {self.fault}{rounds}}}"


@dataclass(frozen=True)
class Scenario:
    seed: int
    nodes: tuple[str, ...]
    faults: tuple[Injected, ...]
    level: str  # sanity, acceptance or stress
    selected: tuple[str, ...] = ()  # --cluster-node: these alone (empty: every node)
    interrupt_after_s: float | None = None  # a stop signal this long after the start
    stop_signal: str = "SIGINT"  # Ctrl-C; SIGTERM: a CI cancel, a scheduler's time limit
    #: a fault of the controller, not of any node (CONTROLLER_FAULTS): the real
    #: contract's ssh launcher from a machine that cannot reach its nodes
    controller: str | None = None
    soak_rounds: int | None = None  # --cluster-soak-rounds
    baseline: bool = False  # first a run without faults, then this one against it
    workers: int = 0  # -n (pytest-xdist)
    #: a fault of the shared filesystem every node sees (its server's error, on every
    #: node's write): the filesystem's cluster case fails, no node is blamed
    shared_storage: str | None = None
    max_nodes: int = 6  # what scenario() was given (replay)

    @property
    def scope(self) -> tuple[str, ...]:
        return self.selected or self.nodes

    def args(self) -> list[str]:
        found = [] if self.level == DEFAULT_LEVEL else ["-m", self.level]
        if self.selected:
            found.append(f"--cluster-node={','.join(self.selected)}")
        if self.soak_rounds:
            found.append(f"--cluster-soak-rounds={self.soak_rounds}")
        if self.workers:
            found += ["-n", str(self.workers)]
        return found

    def spec(self) -> str:
        if self.controller is not None:
            text = (EXAMPLES / "trial.yaml").read_text(encoding="utf-8")
            return re.sub(r"(?m)^  nodes: .*$", f"  nodes: [{', '.join(self.nodes)}]",
                          text, count=1)
        text = (EXAMPLES / "trial-sim.yaml").read_text(encoding="utf-8")
        head, _, _ = text.partition("  faults:\n")
        head = re.sub(r"(?m)^  nodes: .*$", f"  nodes: [{', '.join(self.nodes)}]", head)
        head = re.sub(r"(?m)^  busbw: .*$", '  busbw: ">= 80%"\n  latency: "<= 5 us"', head)
        head = re.sub(r"(?m)^  payloads: .*$", "  payloads: [4 GiB]", head)
        head = re.sub(r"(?m)^  node_counts: .*$", f"  node_counts: [2, {len(self.nodes)}]"
                      if len(self.nodes) > 2 else "  node_counts: [2]", head)
        head = re.sub(r"(?m)^gpus:", SHARED_STORAGE + "gpus:", head, count=1)
        lines = [f.yaml() for f in self.faults]
        if self.shared_storage is not None:  # the server's: every node sees it
            lines += [f"    - {{node: {node}, storage_error: {self.shared_storage}}}"
                      for node in self.nodes]
        faults = "\n".join(lines) + "\n" if lines else "    []\n"
        return head + "  faults:\n" + faults

    def replay(self) -> str:
        return f"python bench/truth.py --seed {self.seed} --max-nodes {self.max_nodes}"


#: Faults of the controller (the machine pytest runs on), each the environment it gives
#: the run: the nodes' names do not resolve here; no ssh client on PATH. Nothing is
#: learned about any node: no node may be rejected, unreachable or drained for them.
CONTROLLER_FAULTS: dict[str, dict[str, str]] = {
    "names_do_not_resolve": {},
    "no_ssh_client": {"PATH": "/nonexistent"},
}


#: The shared filesystem's faults (the sim's storage_error on every node): its export
#: full, its server's I/O error, the path gone, read-only.
SHARED_STORAGE_FAULTS = ("ENOSPC", "EIO", "ENOENT", "EROFS")


def scenario(seed: int, max_nodes: int = 6, interrupts: bool = True) -> Scenario:
    """The scenario of a seed: 2 to max_nodes nodes, none to three faults of any kind on
    random nodes (a node may carry several), a level, sometimes a --cluster-node
    selection, sometimes a Ctrl-C at a random moment."""
    rng = random.Random(seed)  # noqa: S311 (a replayable scenario, not a secret)
    count = rng.randint(2, max(2, max_nodes))
    nodes = tuple(f"gpu-{i:03d}" for i in range(1, count + 1))
    soak = rng.choice((2, 3)) if rng.random() < 0.1 else None
    faults = []
    for _ in range(rng.choice((0, 1, 1, 1, 2, 2, 3))):
        kind = rng.choice(sorted(FAULTS))
        gpu = rng.randrange(8) if FAULTS[kind].per_gpu else None
        rounds = None
        if soak is not None:  # on from a round, and sometimes repaired after one
            first = rng.randint(1, soak)
            rounds = (first, rng.choice((None, rng.randint(first, soak))))
        faults.append(Injected(rng.choice(nodes), gpu, kind, rounds))
    level = rng.choice(("acceptance", "acceptance", "sanity", "stress"))
    selected: tuple[str, ...] = ()
    if count > 2 and rng.random() < 0.15:
        selected = tuple(sorted(rng.sample(nodes, rng.randint(1, count - 1))))
    interrupt = rng.uniform(0.5, 6.0) if interrupts and rng.random() < 0.1 else None
    stop = rng.choice(("SIGINT", "SIGTERM"))
    if rng.random() < 0.1:  # the controller's fault: no node fault besides
        controller = rng.choice(sorted(CONTROLLER_FAULTS))
        return Scenario(seed, nodes, (), level, selected, interrupt, stop, controller,
                        max_nodes=max_nodes)
    baseline = soak is None and rng.random() < 0.1
    workers = 2 if rng.random() < 0.1 else 0
    shared = rng.choice(SHARED_STORAGE_FAULTS) if rng.random() < 0.1 else None
    return Scenario(seed, nodes, tuple(faults), level, selected, interrupt, stop,
                    soak_rounds=soak, baseline=baseline, workers=workers,
                    shared_storage=shared, max_nodes=max_nodes)


@dataclass
class Outcome:
    """What a scenario's run left: its exit status, output, run directory, and the gate's
    answer on it."""

    exit_status: int
    output: str
    run: Path | None
    verdict: dict[str, object] | None
    gate_status: int | None = None
    gate_output: str = ""
    interrupted: bool = False
    extra: dict[str, object] = field(default_factory=dict)


def run(scenario_: Scenario, where: Path, timeout_s: float = 600.0) -> Outcome:
    """Run the scenario as a user runs it (a pytest process with every view written),
    then the gate on its evidence."""
    where.mkdir(parents=True, exist_ok=True)
    (where / "trial.yaml").write_text(scenario_.spec(), encoding="utf-8")
    metrics = where / "metrics.prom"
    command = [sys.executable, "-m", "pytest", "--cluster=trial.yaml", "-p",
               "no:cacheprovider", "-p", "no:hypothesispytest", "--cluster-reports=reports",
               f"--cluster-metrics={metrics}", *scenario_.args()]
    if scenario_.baseline:  # the same cluster without its faults, accepted first
        healthy = replace(scenario_, faults=(), baseline=False, interrupt_after_s=None,
                          selected=())
        first = run(healthy, where / "baseline", timeout_s)
        if first.run is not None:
            command.append(f"--cluster-baseline={first.run}")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    if scenario_.controller is not None:
        env.update(CONTROLLER_FAULTS[scenario_.controller])
    with subprocess.Popen(command, cwd=where, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                          text=True) as child:
        interrupted = False
        if scenario_.interrupt_after_s is not None:
            try:
                child.wait(timeout=scenario_.interrupt_after_s)
            except subprocess.TimeoutExpired:
                child.send_signal(getattr(signal, scenario_.stop_signal))
                interrupted = True
        output, _ = child.communicate(timeout=timeout_s)
        status = child.returncode
    latest = where / "reports" / "latest"
    run_dir = latest.resolve() if latest.exists() else None
    verdict = None
    if run_dir is not None and (run_dir / "verdict.json").is_file():
        verdict = json.loads((run_dir / "verdict.json").read_text(encoding="utf-8"))
    found = Outcome(status, output, run_dir, verdict, interrupted=interrupted)
    if run_dir is not None and status in range(256):
        gate = subprocess.run([sys.executable, "-m", "pytest_cluster.cli", "gate",
                               f"--exit-status={status}", str(run_dir)],
                              capture_output=True, text=True, check=False, env=env)
        found.gate_status, found.gate_output = gate.returncode, gate.stdout + gate.stderr
    if run_dir is not None:
        found.extra["metrics"] = metrics if metrics.is_file() else None
    return found


def _node_records(verdict: dict[str, object]) -> dict[str, dict[str, object]]:
    nodes = verdict.get("nodes")
    assert isinstance(nodes, list)
    return {str(n["node"]): n for n in nodes if isinstance(n, dict)}


def _covered(scenario_: Scenario, truth: Truth) -> tuple[str, ...]:
    """The fault's clauses the run's level covers (the ladder: its level and below)."""
    top = LEVELS.index(scenario_.level)
    return tuple(c for c in truth.must if LEVELS.index(level_of(c)) <= top)


def _decidable(scenario_: Scenario, node: str) -> bool:
    """Whether a relative fault of `node` can be singled out: at least three nodes in
    scope, none of them down, and it the only one with a relative fault."""
    scope = scenario_.scope
    relative = {f.node for f in scenario_.faults if f.truth.relative and f.node in scope}
    down = {f.node for f in scenario_.faults if f.truth.down}
    return len(scope) >= 3 and relative == {node} and not down


#: The lies about a node's storage figures: such a node is no witness of its peers'.
STORAGE_LIES = ("lies: storage_bytes", "lies: storage_seconds", "lies: read_back")


def _witnesses(scenario_: Scenario) -> int:
    """How many nodes in scope report honest storage figures: not lying about them, not
    down."""
    dishonest = {f.node for f in scenario_.faults
                 if f.fault in STORAGE_LIES or f.truth.down}
    return len(set(scenario_.scope) - dishonest)


def violations(scenario_: Scenario, outcome: Outcome) -> list[str]:
    """Every sentence of the run that the scenario's truth contradicts (none: it told the
    truth)."""
    if outcome.verdict is None:
        if not outcome.interrupted:
            return [f"no verdict.json (exit status {outcome.exit_status}): "
                    f"{outcome.output[-600:]}"]
        if outcome.exit_status not in (2, -signal.SIGINT, -signal.SIGTERM):
            return [f"an interrupted run without a verdict exited {outcome.exit_status}, "
                    "not 2"]
        return []
    nodes = _node_records(outcome.verdict)
    if scenario_.controller is not None:
        return [*_controller_violations(scenario_, outcome, nodes), *_views(outcome)]
    # partial: a selection (-m, -k, --cluster-node) left checks out, every selected one ran
    incomplete = outcome.verdict.get("status") in ("interrupted", "internal_error")
    found = _incomplete_violations(outcome) if incomplete else []
    faults_of: dict[str, list[Injected]] = {}
    for fault in scenario_.faults:
        faults_of.setdefault(fault.node, []).append(fault)
    for node in scenario_.scope:
        record = nodes.get(node)
        if record is None:
            found.append(f"{node} is in scope but verdict.json has no line for it")
            continue
        found.extend(_node_violations(scenario_, node, record, faults_of.get(node, []),
                                      judged=not incomplete))
    if not incomplete:
        found.extend(_lie_violations(scenario_, outcome, faults_of))
    found.extend(_drain_violations(scenario_, outcome, nodes, set(faults_of)))
    if scenario_.shared_storage is not None and not incomplete:
        found.extend(_shared_storage_violations(scenario_, outcome))
    found.extend(_views(outcome))
    return found


def _shared_storage_violations(scenario_: Scenario, outcome: Outcome) -> list[str]:
    """A fault of the filesystem every node sees fails the filesystem's cluster case
    (where the level runs its checks across nodes), naming it as the filesystem's."""
    assert outcome.verdict is not None
    failed = outcome.verdict.get("cluster_checks_failed")
    storage = [c for c in failed if isinstance(c, dict)
               and str(c.get("clause", "")).startswith("storage")] \
        if isinstance(failed, list) else []
    if LEVELS.index(scenario_.level) >= LEVELS.index("acceptance") and not storage:
        return [f"the shared filesystem's {scenario_.shared_storage} on every node failed "
                f"no cluster case of the filesystem: {failed}"]
    return []


def _incomplete_violations(outcome: Outcome) -> list[str]:
    """A run that did not run every selected check is never PASS: exit 2, and the gate
    does not say PASS."""
    assert outcome.verdict is not None
    found = []
    if outcome.verdict.get("outcome") == "PASS" or outcome.exit_status != 2:
        found.append(f"a run that did not run every check says "
                     f"{outcome.verdict.get('outcome')} (exit status "
                     f"{outcome.exit_status}, not 2)")
    if outcome.gate_status == 0:
        found.append(f"the gate says PASS on an incomplete run: {outcome.gate_output[:300]}")
    return found


def _node_violations(scenario_: Scenario, node: str, record: dict[str, object],
                     own: list[Injected], judged: bool) -> list[str]:
    """One node's verdict held to its faults (`judged`: the run ran every selected check,
    so a node's verdict is final)."""
    state, reason = record.get("verdict"), record.get("reason")
    listed = record.get("failed_clauses")
    failed = [str(c) for c in listed] if isinstance(listed, list) else []
    if state in ("REJECTED", "UNREACHABLE") and not own:
        return [f"healthy {node} is {state}: {reason}"]
    found = []
    allowed = {c for f in own for c in (*f.truth.must, *f.truth.explains)}
    if own:  # a faulty node's figures may fall below the baseline, its rounds count down,
        # its counters (XIDs, ECC, a link's) grow between rounds
        allowed |= {"baseline.*", "soak.availability", "soak.counters"}
    down = any(f.truth.down for f in own)
    unexplained = [c for c in failed if not any(_matches(c, a) for a in allowed)]
    if unexplained and not down:  # a dead node fails every clause it did not answer
        found.append(f"{node} ({', '.join(f.fault for f in own) or 'healthy'}) failed "
                     f"{', '.join(unexplained)}, which none of its faults explains: {reason}")
    if not judged:
        return found  # what a stopped run did not reach is not a verdict on a node
    if down:  # in a soak, down for some rounds: its rounds failed, or it did not answer
        dead = ("UNREACHABLE", "REJECTED") if scenario_.soak_rounds else ("UNREACHABLE",)
        return found if state in dead else \
            [*found, f"{node} is down but its verdict is {state}: {reason}"]
    faulty = any(f.node in scenario_.scope for f in scenario_.faults) \
        or scenario_.shared_storage is not None
    if not own and state != "ACCEPTED" and not (state == "NOT CHECKED" and faulty):
        # undecided beside a faulty peer (a search of two nodes cannot tell which is
        # slow) is honest; with no fault anywhere, every node passes
        found.append(f"healthy {node} is {state}, not ACCEPTED: {reason}")
    masked = any(f.truth.masks for f in own)
    for fault in own:
        wanted = _covered(scenario_, fault.truth)
        if not wanted or (fault.truth.relative and not _decidable(scenario_, node)) \
                or _witnesses(scenario_) < fault.truth.witnesses:
            continue
        if masked and not fault.truth.masks:  # rejected, for the fault that masks it
            wanted = tuple({c for f in own for c in (*f.truth.must, *f.truth.explains)})
        if scenario_.shared_storage is not None:  # nothing was read to find it wrong
            wanted = tuple(c for c in wanted if not c.startswith("storage."))
            if not wanted:
                continue
        if state != "REJECTED" or not any(_matches(c, w) for c in failed for w in wanted):
            found.append(f"{node}'s fault '{fault.fault}' (gpu {fault.gpu}) breaks "
                         f"{' or '.join(wanted)} at level {scenario_.level}, but {node} is "
                         f"{state}: {reason}")
    return found


def _lie_violations(scenario_: Scenario, outcome: Outcome,
                    faults_of: dict[str, list[Injected]]) -> list[str]:
    """A lying node's failure is its bad output: of the clauses its lie must fail, one is
    failed on that node with error kind bad_output in results.jsonl (the claim found out),
    not as a figure that merely missed (a node dead, or short of a GPU, says nothing; nor
    does one whose filesystem failed every node's reads)."""
    liars = [f for f in scenario_.faults if f.truth.lie and f.node in scenario_.scope
             and not any(o.truth.down or o.truth.masks for o in faults_of[f.node])]
    if not liars or outcome.run is None:
        return []
    records = [json.loads(line) for line in (outcome.run / "results.jsonl").read_text(
        encoding="utf-8").splitlines() if line.strip()]
    found = []
    for fault in liars:
        wanted = [c for c in _covered(scenario_, fault.truth)
                  if scenario_.shared_storage is None or not c.startswith("storage.")]
        said = [r for r in records if r.get("node") == fault.node
                and r.get("error_kind") == "bad_output"
                and any(_matches(str(r.get("clause", "")), w) for w in wanted)]
        if wanted and not said:
            found.append(f"{fault.node}'s lie '{fault.fault}' is not found out as its bad "
                         f"output of {' or '.join(wanted)}")
    return found


def _drain_violations(scenario_: Scenario, outcome: Outcome,
                      nodes: dict[str, dict[str, object]], faulty: set[str]) -> list[str]:
    """verdict.json's drain lines and the gate's FAIL lines name faulty nodes only; the
    gate says PASS only where every node in scope is ACCEPTED."""
    assert outcome.verdict is not None
    found = []
    drain = outcome.verdict.get("drain")
    for line in drain if isinstance(drain, list) else []:
        match = re.search(r"NodeName=(\S+)", str(line))
        if match and match.group(1) not in faulty:
            found.append(f"healthy {match.group(1)} is drained: {line}")
    if outcome.gate_status is None:
        return found
    for line in outcome.gate_output.splitlines():
        match = re.match(r"pytest-cluster FAIL (\S+?):", line)
        if match and match.group(1) not in faulty:
            found.append(f"the gate fails healthy {match.group(1)}: {line}")
    if outcome.gate_status == 0 and any(
            nodes.get(n, {}).get("verdict") != "ACCEPTED" for n in scenario_.scope):
        found.append("the gate says PASS though a node in scope is not ACCEPTED")
    return found


def _views(outcome: Outcome) -> list[str]:
    """The consistency oracle's disagreements (a run stopped by Ctrl-C aside: its
    terminal is cut where the signal landed)."""
    if outcome.run is None or outcome.interrupted:
        return []
    metrics = outcome.extra.get("metrics")
    return [f"views disagree: {d}" for d in check(
        outcome.run, outcome.output, metrics if isinstance(metrics, Path) else None)]


def _controller_violations(scenario_: Scenario, outcome: Outcome,
                           nodes: dict[str, dict[str, object]]) -> list[str]:
    """A fault of the controller drains no node: every node's verdict says the tool could
    not check it, the run is an ERROR naming the cause, and the gate says ERROR."""
    found = []
    for node in scenario_.scope:
        state = nodes.get(node, {}).get("verdict")
        if state in ("REJECTED", "UNREACHABLE"):
            found.append(f"{node} is {state} for the controller's fault "
                         f"({scenario_.controller}): {nodes[node].get('reason')}")
    assert outcome.verdict is not None
    if outcome.verdict.get("drain"):
        found.append(f"the controller's fault ({scenario_.controller}) drains nodes: "
                     f"{outcome.verdict.get('drain')}")
    if outcome.verdict.get("outcome") != "ERROR":
        found.append(f"the controller's fault ({scenario_.controller}) is a run of outcome "
                     f"{outcome.verdict.get('outcome')}, not ERROR")
    if outcome.gate_status not in (None, 2):
        found.append(f"the gate exits {outcome.gate_status} for the controller's fault, not "
                     f"2 (ERROR): {outcome.gate_output[:300]}")
    return found


def describe(scenario_: Scenario) -> str:
    """A scenario in a few lines, with how to replay it."""
    faults = "; ".join(f"{f.node}{'' if f.gpu is None else f' gpu {f.gpu}'}: {f.fault}"
                       + ("" if f.rounds is None else f" (rounds {f.rounds[0]}-"
                          f"{f.rounds[1] or scenario_.soak_rounds})")
                       for f in scenario_.faults) or "no fault"
    stop = "" if scenario_.interrupt_after_s is None else \
        f", {scenario_.stop_signal} after {scenario_.interrupt_after_s:.1f} s"
    stop += f", a soak of {scenario_.soak_rounds} rounds" if scenario_.soak_rounds else ""
    stop += ", against a baseline of its healthy self" if scenario_.baseline else ""
    stop += f", -n {scenario_.workers}" if scenario_.workers else ""
    stop += f", the shared filesystem's {scenario_.shared_storage} on every node" \
        if scenario_.shared_storage else ""
    chosen = f", --cluster-node={','.join(scenario_.selected)}" if scenario_.selected else ""
    if scenario_.controller is not None:
        faults = f"the controller's fault: {scenario_.controller}"
    return (f"seed {scenario_.seed}: {len(scenario_.nodes)} nodes, level "
            f"{scenario_.level}{chosen}{stop}; {faults} (replay: {scenario_.replay()})")


def timed(scenario_: Scenario, where: Path) -> tuple[list[str], float]:
    """The scenario run and judged, and how long it took."""
    started = time.monotonic()
    outcome = run(scenario_, where)
    return violations(scenario_, outcome), time.monotonic() - started

"""The slurm launcher: one `srun` step for all nodes, one task per node.

Before the step, `sinfo` says which nodes are down, drained or not responding: those fail
at once with SLURM's reason instead of hanging the step. The probe's source goes to every
task over srun's stdin (`--input=all`) to the node runner, which enforces the timeout on the
node and marks its output with the node's name and exit code; `--label` keeps the tasks'
lines apart. On timeout or Ctrl-C the step's job is cancelled (`scancel --name`).
"""

from __future__ import annotations

import getpass
import subprocess
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

from pytest_cluster.launchers.base import (
    ErrorKind,
    Finished,
    Launcher,
    ProbeResult,
    execute,
    fan_out,
    probe_result,
)
from pytest_cluster.launchers.node_runner import EXIT_MARKER, LAST, MORE, NODE_MARKER
from pytest_cluster.launchers.remote import classify_runner_exit, runner_argv, runner_payload
from pytest_cluster.probes import ProbeCall
from pytest_cluster.spec.model import ClusterSpec, SlurmSpec, Spec

NO_TASK = "srun ran no task on the node"
#: sinfo states (%T) in which a node cannot run the step.
BAD_STATES = ("down", "drain", "fail", "maint", "unknown", "inval", "future", "power",
              "reboot")


def sinfo_command(nodes: Sequence[str]) -> list[str]:
    return ["sinfo", "--noheader", "--Node", f"--nodes={','.join(nodes)}",
            "--format=%N|%T|%E"]


def node_problems(sinfo_output: str, nodes: Sequence[str]) -> dict[str, str]:
    """Nodes that cannot run a step, with SLURM's state and reason (from sinfo_command)."""
    seen: dict[str, str] = {}
    problems: dict[str, str] = {}
    for line in sinfo_output.splitlines():
        parts = line.strip().split("|", 2)
        if len(parts) != 3:
            continue
        name, state, reason = parts
        seen[name] = state
        bad = state.endswith("*") or any(state.startswith(s) for s in BAD_STATES)
        if bad and name in nodes:
            why = f" ({reason})" if reason and reason != "none" else ""
            problems[name] = f"SLURM reports the node {state}{why}"
    for name in nodes:
        if name not in seen:
            problems[name] = "SLURM does not know this node (not in sinfo)"
    return problems


def srun_command(slurm: SlurmSpec, nodes: Sequence[str], python: str, call: ProbeCall,
                 timeout_s: float, job_name: str) -> list[str]:
    argv = ["srun", f"--nodelist={','.join(nodes)}", f"--nodes={len(nodes)}",
            f"--ntasks={len(nodes)}", "--ntasks-per-node=1", "--input=all", "--label",
            "--kill-on-bad-exit=0", "--no-kill", f"--job-name={job_name}",
            "--export=ALL,PYTEST_CLUSTER_MARKERS=1"]
    if slurm.partition:
        argv.append(f"--partition={slurm.partition}")
    if slurm.account:
        argv.append(f"--account={slurm.account}")
    if slurm.reservation:
        argv.append(f"--reservation={slurm.reservation}")
    if slurm.time_limit_min:
        argv.append(f"--time={slurm.time_limit_min}")
    return [*argv, *runner_argv(python, timeout_s, call.args)]


def scancel_command(job_name: str) -> list[str]:
    return ["scancel", f"--name={job_name}", f"--user={getpass.getuser()}"]


@dataclass
class TaskOutput:
    node: str = ""
    stdout: list[str] = field(default_factory=list)
    partial: str = ""  # pieces of a line whose last piece has not come yet
    stderr: list[str] = field(default_factory=list)
    exit_code: int | None = None


def split_labeled(stdout: str, stderr: str) -> dict[str, TaskOutput]:
    """srun --label output ("3: text") per node, by the runner's markers."""
    tasks: dict[str, TaskOutput] = {}
    for text, stream in ((stdout, "stdout"), (stderr, "stderr")):
        for line in text.splitlines():
            label, sep, rest = line.partition(": ")
            if not sep or not label.strip().isdigit():
                continue
            task = tasks.setdefault(label.strip(), TaskOutput())
            if stream == "stderr":
                task.stderr.append(rest)
            elif rest.startswith(NODE_MARKER):
                task.node = rest.split(maxsplit=1)[1].strip()
            elif rest.startswith(EXIT_MARKER):
                task.exit_code = int(rest.split()[1])
            elif rest.startswith(MORE):  # the probe's long line, cut in pieces by the runner
                task.partial += rest[1:]
            elif rest.startswith(LAST):
                task.stdout.append(task.partial + rest[1:])
                task.partial = ""
    return {task.node: task for task in tasks.values() if task.node}


class SlurmLauncher(Launcher):
    name = "slurm"

    def __init__(self, spec: ClusterSpec, slurm: SlurmSpec) -> None:
        super().__init__(spec)
        self.slurm = slurm

    @classmethod
    def from_spec(cls, spec: Spec) -> Launcher:
        return cls(spec.cluster, spec.slurm or SlurmSpec())

    def _failed(self, node: str, probe: str, kind: ErrorKind, message: str,
                stderr: str = "", started: float = 0.0) -> ProbeResult:
        return ProbeResult(node, probe, None, kind, message, stderr_tail=stderr[-2000:],
                           started_at=started, duration_s=time.time() - started)

    def run(self, call: ProbeCall, nodes: Sequence[str],
            timeout_s: float) -> dict[str, ProbeResult]:
        return self.run_source(call, call.source(), nodes, timeout_s)

    def run_source(self, call: ProbeCall, source: str, nodes: Sequence[str],
                   timeout_s: float) -> dict[str, ProbeResult]:
        """Run `source` as probe `call` on `nodes` (run() with the probe's own source)."""
        started = time.time()
        results: dict[str, ProbeResult] = {}
        try:
            info = subprocess.run(sinfo_command(nodes), capture_output=True, text=True,
                                  timeout=60, check=False)
            problems = node_problems(info.stdout, nodes) if info.returncode == 0 else None
            why = info.stderr.strip()
        except (OSError, subprocess.TimeoutExpired) as exc:
            problems, why = None, str(exc)
        if problems is None:
            return {n: self._failed(n, call.name, ErrorKind.UNREACHABLE,
                                    f"sinfo failed, no SLURM controller answered: {why}",
                                    started=started) for n in nodes}
        for node, problem in problems.items():
            results[node] = self._failed(node, call.name, ErrorKind.UNREACHABLE, problem,
                                         started=started)
        healthy = [n for n in nodes if n not in problems]
        if healthy:
            results.update(self._step(call, source, healthy, timeout_s, started))
        # A node that fails to launch (dead slurmd not yet marked down) ends the whole
        # step: run the nodes that got no task again, each in a step of its own, so the
        # bad node fails alone.
        again = [n for n in healthy if results[n].error is ErrorKind.UNREACHABLE
                 and results[n].message == NO_TASK]
        if len(again) > 1:
            results.update(fan_out(again, lambda node: self._step(
                call, source, [node], timeout_s, time.time())[node], self.spec.parallel))
        return {node: results[node] for node in nodes}

    def _step(self, call: ProbeCall, source: str, nodes: list[str], timeout_s: float,
              started: float) -> dict[str, ProbeResult]:
        job = f"pytest-cluster-{call.name}-{uuid.uuid4().hex[:8]}"
        payload = runner_payload(source)
        argv = srun_command(self.slurm, nodes, self.spec.python, call, timeout_s, job)

        def cancel() -> None:
            subprocess.run(scancel_command(job), capture_output=True, timeout=30, check=False)

        # the nodes kill their probes at timeout_s; srun gets a margin to start the step
        done = execute(argv, payload, timeout_s + 30, hold_stdin=True, cancel=cancel)
        if done.start_error is not None:
            return {n: self._failed(n, call.name, ErrorKind.UNREACHABLE,
                                    f"srun: {done.start_message}", started=started)
                    for n in nodes}
        tasks = split_labeled(done.stdout, done.stderr)
        unlabeled = "\n".join(line for line in done.stderr.splitlines()
                              if not line.split(": ", 1)[0].strip().isdigit())
        results = {}
        for node in nodes:
            task = tasks.get(node)
            if task is None or task.exit_code is None:
                kind = ErrorKind.TIMEOUT if done.timed_out else ErrorKind.UNREACHABLE
                message = ("no answer within the timeout; the step was cancelled"
                           if done.timed_out else NO_TASK)
                results[node] = self._failed(node, call.name, kind, message,
                                             unlabeled or done.stderr, started)
                continue
            finished = Finished(task.exit_code, "\n".join(task.stdout),
                                "\n".join(task.stderr))
            result = probe_result(node, call.name, finished, timeout_s, started,
                                  time.time() - started)
            results[node] = classify_runner_exit(result, self.spec.python)
        return results

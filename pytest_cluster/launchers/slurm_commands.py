"""The commands the slurm launcher runs (srun, scancel), built from the spec as exact argument
lists, and how it reads srun's output: each task's labelled lines, and the errors srun
names a node in. Pure functions."""

from __future__ import annotations

import getpass
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pytest_cluster.launchers.node_runner import EXIT_MARKER, LAST, MORE, NODE_MARKER
from pytest_cluster.launchers.remote import runner_argv
from pytest_cluster.launchers.slurm_nodes import IMMEDIATE_S

if TYPE_CHECKING:
    from pytest_cluster.contract.model import SlurmSpec
    from pytest_cluster.probes import ProbeCall

def srun_command(slurm: SlurmSpec, nodes: Sequence[str], python: str, call: ProbeCall,
                 timeout_s: float, job_name: str,
                 immediate_s: int = IMMEDIATE_S) -> list[str]:
    argv = ["srun", f"--nodelist={','.join(nodes)}", f"--nodes={len(nodes)}",
            f"--ntasks={len(nodes)}", "--ntasks-per-node=1", "--input=all", "--label",
            "--kill-on-bad-exit=0", "--no-kill", f"--immediate={immediate_s}",
            f"--job-name={job_name}", "--export=ALL,PYTEST_CLUSTER_MARKERS=1"]
    return [*argv, *site_options(slurm), *runner_argv(python, timeout_s, call.args)]


def site_options(slurm: SlurmSpec) -> list[str]:
    """Where the site wants our steps: partition, account, reservation, time limit."""
    found = [f"--partition={slurm.partition}" if slurm.partition else "",
             f"--account={slurm.account}" if slurm.account else "",
             f"--reservation={slurm.reservation}" if slurm.reservation else "",
             f"--time={slurm.time_limit_min}" if slurm.time_limit_min else ""]
    return [option for option in found if option]


def mpi_srun_command(slurm: SlurmSpec, nodes: Sequence[str], tasks_per_node: int,
                     program: Sequence[str], job_name: str,
                     immediate_s: int = IMMEDIATE_S) -> list[str]:
    """One step of a program built with MPI: `tasks_per_node` tasks on each node, ranked
    by SLURM's PMI (--mpi), every task's lines labelled; one task failing ends them all."""
    argv = ["srun", f"--nodelist={','.join(nodes)}", f"--nodes={len(nodes)}",
            f"--ntasks={len(nodes) * tasks_per_node}", f"--ntasks-per-node={tasks_per_node}",
            f"--mpi={slurm.mpi}", "--label", "--kill-on-bad-exit=1",
            f"--immediate={immediate_s}", f"--job-name={job_name}"]
    return [*argv, *site_options(slurm), *program]


def task_lines(text: str, task: int = 0) -> str:
    """What one task printed, from srun --label output ('  0: text')."""
    found = []
    for line in text.splitlines():
        label, sep, rest = line.partition(": ")
        if sep and label.strip().isdigit() and int(label) == task:
            found.append(rest)
    return "\n".join(found) + ("\n" if found else "")


def scancel_command(job_name: str) -> list[str]:
    return ["scancel", f"--name={job_name}", f"--user={getpass.getuser()}"]


_LAUNCH_FAILED = re.compile(r"Task launch for \S+ failed on node ([^\s:]+): (.+)$")
_NO_RESOURCES = re.compile(r"(Unable to allocate resources|Unable to create step for job "
                           r"\S+|Job allocation \S+ has been revoked)[.:]?\s*(.*)$")


@dataclass(frozen=True)
class SrunErrors:
    """What srun's own stderr lines say went wrong with a step."""

    launch_failed: dict[str, str]  # node -> srun's words for it
    no_resources: str  # srun's words when the step got no nodes at all ('' otherwise)

    @property
    def busy(self) -> bool:
        """The nodes were taken (or not given in time), rather than refused (a partition,
        account or controller error, final for every node)."""
        return "busy" in self.no_resources or "queued and waiting" in self.no_resources


def srun_errors(stderr: str) -> SrunErrors:
    """srun's lines about the step (not the tasks' labeled lines)."""
    launch: dict[str, str] = {}
    words: list[str] = []
    no_resources = False
    for raw in stderr.splitlines():
        line = raw.strip()
        if not line.startswith("srun:"):
            continue
        found = _LAUNCH_FAILED.search(line)
        if found:
            launch.setdefault(found.group(1), line)
        if "queued and waiting for resources" in line:
            words.append(line)
        if _NO_RESOURCES.search(line):
            no_resources = True
            words.append(line)
    return SrunErrors(launch, " / ".join(words) if no_resources else "")


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

"""A real small cluster on this machine: one network namespace per node, joined by a
bridge in a switch namespace, an OpenSSH server in each node. The machine running the
tests reaches the nodes over a veth into the switch (node addresses exist only inside the
namespaces). Needs root, iproute2 and openssh-server; everything is removed by PID and by
name when the cluster stops, whatever happened (also at interpreter exit).

    with NetnsCluster(4) as cluster:   # nodes node1..node4, ssh config in cluster.ssh_config
        ...

On request a storage server stands beside the nodes (its own namespace and link on the
switch, an sshd serving an export directory) and every node mounts that export with sshfs
(share(); needs sshfs):

    with cluster.share("/mnt/shared") as export:   # /mnt/shared on every node, over the net
        cluster.run_on("node1", ["sh", "-c", "echo hi > /mnt/shared/f"])
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TypeVar

SSHD = "/usr/sbin/sshd"
T = TypeVar("T")
#: the storage server's name (shape(), run_on()) and its namespace's suffix
STORAGE = "storage"
#: how each node mounts the export: nothing of a file's data or attributes or of a
#: directory's names is served from the node's own cache (no kernel_cache, so the page
#: cache is dropped at each open; no sshfs directory cache; no FUSE attribute or entry
#: cache), so every read crosses the node's link; allow_other: every user on the node
#: sees it, as on a real shared filesystem; one ssh connection per node
SSHFS_OPTIONS = ("allow_other,dir_cache=no,attr_timeout=0,entry_timeout=0,"
                 "negative_timeout=0,max_conns=1")


class Unavailable(Exception):
    """This machine cannot host the cluster (not root, a tool missing); says which."""


def _run(*argv: str) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=30)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: {done.stderr.strip()}")


def check_machine() -> None:
    if os.geteuid() != 0:
        raise Unavailable("needs root (network namespaces)")
    for tool in ("ip", "ssh", "ssh-keygen"):
        if shutil.which(tool) is None:
            raise Unavailable(f"{tool} is not installed (apt install iproute2 openssh-client)")
    if not Path(SSHD).exists():
        raise Unavailable("sshd is not installed (apt install openssh-server)")


class NetnsCluster:
    def __init__(self, size: int = 4) -> None:
        check_machine()
        tag = os.getpid() % 10000
        self.prefix = f"pc{tag}"
        self.subnet = f"10.{200 + tag % 50}.{tag // 50 % 250}"
        self.nodes = [f"node{i}" for i in range(1, size + 1)]
        self.addresses = {n: f"{self.subnet}.{10 + i}" for i, n in enumerate(self.nodes, 1)}
        self.workdir = Path(tempfile.mkdtemp(prefix="pcnet-"))
        self.ssh_config = self.workdir / "ssh_config"
        self.sshd: dict[str, subprocess.Popen[bytes]] = {}
        self.slurmd: dict[str, subprocess.Popen[bytes]] = {}
        self.slurmctld: subprocess.Popen[bytes] | None = None
        self.slurm_env: dict[str, str] = {}
        self.slurm_conf = self.workdir / "slurm" / "slurm.conf"
        self.tmpfs: dict[str, tuple[str, str]] = {}  # per node: a folder of its own tmpfs
        #: per node, the process that delays its frames (delay() without netem)
        self.delay_lines: dict[str, subprocess.Popen[bytes]] = {}
        #: the storage server (start_storage): its address, its sshd, the directory it
        #: serves; and the path every node mounts that export on while share() holds
        self.storage_address = f"{self.subnet}.2"
        self.storage_dir = self.workdir / STORAGE
        self.export = self.storage_dir / "export"
        self.storage_sshd: subprocess.Popen[bytes] | None = None
        self.shared_mount: str | None = None
        self._mounted: dict[str, str] = {}  # per node: where its running sshd has the share
        self._started = False

    def netns(self, node: str) -> str:
        return f"{self.prefix}{node}"

    @property
    def switch(self) -> str:
        return f"{self.prefix}sw"

    def __enter__(self) -> NetnsCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        atexit.register(self.stop)
        self._started = True
        sw = self.switch
        _run("ip", "netns", "add", sw)
        _run("ip", "-n", sw, "link", "add", "br0", "type", "bridge")
        _run("ip", "-n", sw, "link", "set", "br0", "up")
        host_if = f"{self.prefix}h"
        _run("ip", "link", "add", host_if, "type", "veth", "peer", "name", "up0", "netns", sw)
        _run("ip", "-n", sw, "link", "set", "up0", "master", "br0", "up")
        _run("ip", "addr", "add", f"{self.subnet}.1/24", "dev", host_if)
        _run("ip", "link", "set", host_if, "up")
        for index, node in enumerate(self.nodes, 1):
            ns = self.netns(node)
            _run("ip", "netns", "add", ns)
            _run("ip", "-n", sw, "link", "add", f"v{index}", "type", "veth", "peer", "name",
                 "eth0", "netns", ns)
            _run("ip", "-n", sw, "link", "set", f"v{index}", "master", "br0", "up")
            _run("ip", "-n", ns, "addr", "add", f"{self.addresses[node]}/24", "dev", "eth0")
            _run("ip", "-n", ns, "link", "set", "eth0", "up")
            _run("ip", "-n", ns, "link", "set", "lo", "up")
        self._keys()
        Path("/run/sshd").mkdir(parents=True, exist_ok=True)  # sshd's privilege separation
        for node in self.nodes:
            self.start_sshd(node)
        for node in self.nodes:
            self.wait_for_port(node)

    def rail_address(self, node: str, number: int) -> str:
        return f"172.{16 + number}.{os.getpid() % 250}.{10 + self.nodes.index(node) + 1}"

    def add_rail(self, number: int) -> str:
        """A second network beside eth0 (a rail, 1 to 15): a bridge `br<number>` in the
        switch and on each node an interface `rail<number>`, up, with an address of the
        rail's own subnet (no route to eth0's). Returns the interface's name."""
        sw, name = self.switch, f"rail{number}"
        _run("ip", "-n", sw, "link", "add", f"br{number}", "type", "bridge")
        _run("ip", "-n", sw, "link", "set", f"br{number}", "up")
        for index, node in enumerate(self.nodes, 1):
            ns = self.netns(node)
            _run("ip", "-n", sw, "link", "add", f"r{number}v{index}", "type", "veth", "peer",
                 "name", name, "netns", ns)
            _run("ip", "-n", sw, "link", "set", f"r{number}v{index}", "master", f"br{number}",
                 "up")
            _run("ip", "-n", ns, "addr", "add", f"{self.rail_address(node, number)}/24", "dev",
                 name)
            _run("ip", "-n", ns, "link", "set", name, "up")
        return name

    def remove_rail(self, number: int) -> None:
        """Undo add_rail: its veths (both ends) and its bridge."""
        for index in range(1, len(self.nodes) + 1):
            subprocess.run(["ip", "-n", self.switch, "link", "del", f"r{number}v{index}"],
                           capture_output=True, check=False, timeout=30)
        subprocess.run(["ip", "-n", self.switch, "link", "del", f"br{number}"],
                       capture_output=True, check=False, timeout=30)

    def shape(self, node: str, rate: str | None, rail: int = 0) -> None:
        """Limit `node`'s link to `rate` (tc tbf, e.g. '1gbit') both ways: on its eth0
        (what it sends) and on its switch-side veth (what it receives), or those of its
        `rail` (add_rail); None: unlimited. `node` may be STORAGE, the storage server's
        link (start_storage)."""
        if node == STORAGE:
            if rail:
                raise ValueError("the storage server has no rails")
            ends: tuple[tuple[str, str], ...] = ((self.netns(STORAGE), "eth0"),
                                                 (self.switch, "vst"))
        elif not rail:
            index = self.nodes.index(node) + 1
            ends = ((self.netns(node), "eth0"), (self.switch, f"v{index}"))
        else:
            index = self.nodes.index(node) + 1
            ends = ((self.netns(node), f"rail{rail}"), (self.switch, f"r{rail}v{index}"))
        for ns, dev in ends:
            subprocess.run(["ip", "netns", "exec", ns, "tc", "qdisc", "del", "dev", dev,
                            "root"], capture_output=True, check=False, timeout=30)
            if rate is not None:
                _run("ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", dev, "root",
                     "tbf", "rate", rate, "burst", "128kb", "latency", "50ms")

    def delay(self, node: str, delay_ms: float | None) -> None:
        """Delay every frame of `node`'s link by `delay_ms` both ways, as a node on
        another spine is farther from every peer; None: no delay. With the kernel's
        netem, `tc qdisc add ... netem delay 2ms` on its eth0 (what it sends) and on its
        switch-side veth (what it receives). A kernel without sch_netem (this CI's) gets
        the same from a delay line: the node's veth is taken off the bridge and a process
        in the switch namespace (DELAY_LINE) forwards each frame between it and a new
        bridge port after the delay, each way; tx checksumming (so TSO) is turned off
        where frames enter the line, so each frame it reads is whole."""
        index = self.nodes.index(node) + 1
        ends = ((self.netns(node), "eth0"), (self.switch, f"v{index}"))
        for ns, dev in ends:
            subprocess.run(["ip", "netns", "exec", ns, "tc", "qdisc", "del", "dev", dev,
                            "root"], capture_output=True, check=False, timeout=30)
        self._stop_delay_line(node)
        if delay_ms is None:
            return
        added = [subprocess.run(["ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", dev,
                                 "root", "netem", "delay", f"{delay_ms:g}ms"],
                                capture_output=True, text=True, check=False, timeout=30)
                 for ns, dev in ends]
        if all(done.returncode == 0 for done in added):
            return
        for ns, dev in ends:
            subprocess.run(["ip", "netns", "exec", ns, "tc", "qdisc", "del", "dev", dev,
                            "root"], capture_output=True, check=False, timeout=30)
        sw, port, line = self.switch, f"v{index}", f"d{index}a"
        _run("ip", "-n", sw, "link", "set", port, "nomaster")
        _run("ip", "-n", sw, "link", "add", line, "type", "veth", "peer", "name", f"d{index}b")
        _run("ip", "-n", sw, "link", "set", f"d{index}b", "master", "br0", "up")
        for dev in (port, line):
            _run("ip", "-n", sw, "link", "set", dev, "promisc", "on", "up")
        _run("ip", "netns", "exec", self.netns(node), sys.executable, "-c", TX_CSUM_OFF,
             "eth0")
        _run("ip", "netns", "exec", sw, sys.executable, "-c", TX_CSUM_OFF, f"d{index}b")
        self.delay_lines[node] = subprocess.Popen(
            ["ip", "netns", "exec", sw, sys.executable, "-c", DELAY_LINE, port, line,
             f"{delay_ms / 1000:g}"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(0.5)
        if self.delay_lines[node].poll() is not None:
            raise RuntimeError(f"the delay line on {node} ended: "
                               f"{self.delay_lines[node].communicate()[1].decode()[-500:]}")

    def _stop_delay_line(self, node: str) -> None:
        """Stop `node`'s delay line (by its pid) and put its veth back on the bridge."""
        process = self.delay_lines.pop(node, None)
        if process is None:
            return
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
        index = self.nodes.index(node) + 1
        subprocess.run(["ip", "-n", self.switch, "link", "del", f"d{index}a"],
                       capture_output=True, check=False, timeout=30)
        _run("ip", "-n", self.switch, "link", "set", f"v{index}", "promisc", "off", "master",
             "br0")

    def _keys(self) -> None:
        key = self.workdir / "id_ed25519"
        _run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key))
        (self.workdir / "authorized_keys").write_text(Path(f"{key}.pub").read_text())
        lines = []
        for node in self.nodes:
            home = self.workdir / node
            home.mkdir()
            _run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(home / "host_key"))
            (home / "sshd_config").write_text("\n".join([
                f"ListenAddress {self.addresses[node]}", "Port 22",
                f"HostKey {home / 'host_key'}", f"PidFile {home / 'sshd.pid'}",
                f"AuthorizedKeysFile {self.workdir / 'authorized_keys'}",
                "PermitRootLogin prohibit-password", "PasswordAuthentication no",
                "KbdInteractiveAuthentication no", "UsePAM no", "StrictModes no",
                "MaxSessions 100", "MaxStartups 100", "LogLevel ERROR",
                # a login shell that runs `pyenv init` (this machine's .bashrc) rehashes on
                # every ssh command; one killed by a test leaves pyenv's lock behind, and
                # every later command would wait 60 s for it: try the lock once, go on
                "SetEnv PYENV_REHASH_TIMEOUT=0", ""]))
            lines += [f"Host {node}", f"  HostName {self.addresses[node]}"]
        lines += ["Host *", "  User root", f"  IdentityFile {key}", "  IdentitiesOnly yes",
                  "  StrictHostKeyChecking no", "  UserKnownHostsFile /dev/null",
                  "  LogLevel ERROR", ""]
        self.ssh_config.write_text("\n".join(lines))

    # -- SLURM: slurmctld here, one slurmd per node namespace ---------------------------

    def start_slurm(self, prolog: Path | None = None,
                    tmpfs: dict[str, tuple[str, str]] | None = None) -> dict[str, str]:
        """Start slurmctld and a slurmd per node; the environment srun/sinfo need. With
        `prolog`, slurm.conf's Prolog (run at allocation); `tmpfs`: per node a folder and
        a size, a tmpfs of that size on that folder in that node's own mount namespace
        (its slurmd, its prolog and its jobs see it; the other nodes see this machine's)."""
        self.tmpfs = tmpfs or {}
        for tool in ("slurmctld", "slurmd", "srun", "sinfo", "nsenter", "unshare"):
            if shutil.which(tool) is None:
                raise Unavailable(f"{tool} is not installed (apt install slurm-wlm)")
        d = self.workdir / "slurm"
        shutil.rmtree(d / "state", ignore_errors=True)  # a restart forgets drained nodes
        (d / "state").mkdir(parents=True)
        port = 20000 + os.getpid() % 20000
        nodes = "\n".join(f"NodeName={n} NodeAddr={self.addresses[n]} CPUs=1 State=UNKNOWN"
                          for n in self.nodes)
        for node in self.nodes:
            (d / f"spool-{node}").mkdir(exist_ok=True)
        self.slurm_conf.write_text(f"""ClusterName=pcnetns
SlurmctldHost={socket.gethostname()}({self.subnet}.1)
SlurmctldPort={port}
SlurmdPort={port + 1}
AuthType=auth/none
CredType=cred/none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SlurmUser=root
SlurmdUser=root
ReturnToService=2
SlurmdTimeout=30
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool-%n
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd-%n.pid
SlurmctldLogFile={d}/slurmctld.log
SlurmdLogFile={d}/slurmd-%n.log
{nodes}
PartitionName=debug Nodes={','.join(self.nodes)} Default=YES MaxTime=INFINITE State=UP
""" + (f"Prolog={prolog}\nPrologFlags=Alloc\nPrologEpilogTimeout=120\n" if prolog else ""))
        # srun listens for its tasks; tell them the address they can reach it on
        self.slurm_env = {"SLURM_CONF": str(self.slurm_conf),
                          "SLURM_SRUN_COMM_HOST": f"{self.subnet}.1"}
        env = {**os.environ, **self.slurm_env}
        self.slurmctld = subprocess.Popen(
            ["slurmctld", "-D", "-i", "-f", str(self.slurm_conf)], env=env,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for node in self.nodes:
            self.start_slurmd(node)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            done = subprocess.run(["sinfo", "--noheader", "--format=%T %D"], env=env,
                                  capture_output=True, text=True, check=False)
            if done.stdout.strip() == f"idle {len(self.nodes)}":
                return self.slurm_env
            time.sleep(0.3)
        log = (d / "slurmctld.log").read_text()[-2000:] if (d / "slurmctld.log").exists() else ""
        raise RuntimeError(f"SLURM nodes did not come up: {done.stdout} {log}")

    def start_slurmd(self, node: str) -> None:
        # ip netns exec breaks slurmd's cgroup setup (it mounts a whole new /sys); nsenter
        # + its own host name works. As on a real node, the node's processes (slurmd, its
        # prolog, its jobs) see the node's own network devices in /sys: a sysfs mounted in
        # the node's network namespace, bound over /sys/class/net and its devices, in a
        # mount namespace of the node's own (the rest of /sys, cgroups too, stays)
        own = self.workdir / f"sys-{node}"
        own.mkdir(exist_ok=True)
        unshare = ["unshare", "--uts", "--mount"]
        mount = (f"mount -t sysfs sysfs {own} && mount --bind {own}/class/net /sys/class/net "
                 f"&& mount --bind {own}/devices/virtual/net /sys/devices/virtual/net && ")
        if node in self.tmpfs:
            folder, size = self.tmpfs[node]
            mount += f"mount -t tmpfs -o size={size} tmpfs {folder} && "
        self.slurmd[node] = subprocess.Popen(
            ["nsenter", f"--net=/run/netns/{self.netns(node)}", *unshare, "sh", "-c",
             f"{mount}hostname {node} && exec slurmd -D -f {self.slurm_conf} -N {node}"],
            env={**os.environ, **self.slurm_env}, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def stop_slurmd(self, node: str) -> None:
        process = self.slurmd.pop(node, None)
        if process is not None:
            process.kill()
            process.wait(10)

    @contextlib.contextmanager
    def hold_node(self, node: str) -> Iterator[str]:
        """Another job (`srun --exclusive sleep`, named 'holder') holds `node` inside the
        block; yields its job id. Afterwards the job is cancelled and the node is idle."""
        env = {**os.environ, **self.slurm_env}
        name = f"holder-{os.getpid()}-{time.monotonic_ns()}"
        process = subprocess.Popen(
            ["srun", f"--nodelist={node}", "--exclusive", f"--job-name={name}", "sleep",
             "600"], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True)

        def running() -> str:
            return subprocess.run(["squeue", "--noheader", f"--name={name}",
                                   "--states=RUNNING", "--format=%i"], env=env,
                                  capture_output=True, text=True, check=False,
                                  timeout=30).stdout.strip()

        try:
            yield self.wait_for(running, f"job {name} running on {node}")
        finally:
            subprocess.run(["scancel", f"--name={name}"], env=env, capture_output=True,
                           check=False, timeout=30)
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(10)
            self.wait_idle(node)

    def node_state(self, node: str) -> str:
        """sinfo's state (%T) of `node`."""
        return subprocess.run(["sinfo", "--noheader", "--Node", f"--nodes={node}",
                               "--format=%T"], env={**os.environ, **self.slurm_env},
                              capture_output=True, text=True, check=False,
                              timeout=30).stdout.strip()

    def wait_idle(self, node: str, seconds: float = 120.0) -> None:
        self.wait_for(lambda: self.node_state(node) == "idle", f"{node} idle", seconds)

    @staticmethod
    def wait_for(found: Callable[[], T], what: str, seconds: float = 60.0) -> T:
        """Ask `found` until it returns something true, and return that."""
        deadline = time.monotonic() + seconds
        while True:
            value = found()
            if value:
                return value
            if time.monotonic() > deadline:
                raise RuntimeError(f"gave up waiting for {what} after {seconds:g} s")
            time.sleep(0.3)

    def scontrol(self, *args: str) -> str:
        done = subprocess.run(["scontrol", *args], env={**os.environ, **self.slurm_env},
                              capture_output=True, text=True, check=True, timeout=30)
        return done.stdout

    def _stop_slurm(self) -> None:
        for node in list(self.slurmd):
            self.stop_slurmd(node)
        ctl = self.slurmctld
        if ctl is not None:
            ctl.kill()
            ctl.wait(10)
            self.slurmctld = None

    def start_sshd(self, node: str, private_dir: Path | None = None) -> None:
        """Start the node's sshd; with `private_dir`, in its own mount namespace with an
        empty tmpfs over that directory (a filesystem the other nodes do not share).
        While share() holds, in a mount namespace of its own where the storage server's
        export is mounted with sshfs on `shared_mount` (sshfs and its ssh run in the
        node's network namespace: every byte crosses the node's eth0 and the storage
        server's link) and the storage server's directory is hidden under an empty tmpfs
        (the node reaches the export only over the network); sshd starts only once the
        mount is there, so every session it forks sees it."""
        home = self.workdir / node
        argv = [SSHD, "-D", "-f", str(home / "sshd_config"), "-E", str(home / "sshd.log")]
        if self.shared_mount is not None:
            argv = ["unshare", "--mount", "--propagation", "private", "sh", "-c", SHARE_MOUNT,
                    "sh", str(self.storage_dir / "ssh_config"), SSHFS_OPTIONS,
                    f"{STORAGE}:{self.export}", self.shared_mount, str(self.storage_dir),
                    *argv]
            self._mounted[node] = self.shared_mount
        # `ip netns exec` execs sshd (or unshare, sh, then sshd): this PID is sshd's
        argv = ["ip", "netns", "exec", self.netns(node), *argv]
        if private_dir is not None:
            argv = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
                    'mount -t tmpfs tmpfs "$1" && shift && exec "$@"', "sh",
                    str(private_dir), *argv]
        with (home / "start.log").open("wb") as log:  # why a mount failed, if it did
            self.sshd[node] = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                               stdout=subprocess.DEVNULL, stderr=log)

    @contextlib.contextmanager
    def sshd_stopped(self, node: str) -> Iterator[None]:
        """`node`'s sshd is down inside the block and back (answering) after it."""
        self.stop_sshd(node)
        try:
            yield
        finally:
            self.start_sshd(node)
            self.wait_for_port(node)

    @contextlib.contextmanager
    def link_down(self, node: str) -> Iterator[None]:
        """`node`'s only link is down inside the block and up (sshd answering) after it."""
        link = ["ip", "-n", self.netns(node), "link", "set", "eth0"]
        subprocess.run([*link, "down"], check=True, timeout=30)
        try:
            yield
        finally:
            subprocess.run([*link, "up"], check=True, timeout=30)
            self.wait_for_port(node)

    # -- a storage server and a filesystem every node shares (sshfs) ------------------

    def start_storage(self) -> None:
        """The storage server, once (later calls do nothing): a namespace
        `<prefix>storage` on the switch with eth0 at `storage_address` (its switch-side
        veth is `vst`: shape(STORAGE, rate) limits it as shape() a node's link) and an
        sshd there whose sftp subsystem serves `export`, an empty directory under the
        workdir (this machine sees it as is; the nodes only through share()). The
        cluster's key logs in as root (run_on(STORAGE, ...))."""
        if self.storage_sshd is not None:
            return
        for tool in ("sshfs", "unshare", "nsenter"):
            if shutil.which(tool) is None:
                raise Unavailable(f"{tool} is not installed (apt install sshfs util-linux)")
        if not Path("/dev/fuse").exists():
            raise Unavailable("no /dev/fuse (sshfs needs FUSE)")
        ns, sw, home = self.netns(STORAGE), self.switch, self.storage_dir
        _run("ip", "netns", "add", ns)
        _run("ip", "-n", sw, "link", "add", "vst", "type", "veth", "peer", "name", "eth0",
             "netns", ns)
        _run("ip", "-n", sw, "link", "set", "vst", "master", "br0", "up")
        _run("ip", "-n", ns, "addr", "add", f"{self.storage_address}/24", "dev", "eth0")
        _run("ip", "-n", ns, "link", "set", "eth0", "up")
        _run("ip", "-n", ns, "link", "set", "lo", "up")
        self.export.mkdir(parents=True)
        _run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(home / "host_key"))
        (home / "sshd_config").write_text("\n".join([
            f"ListenAddress {self.storage_address}", "Port 22",
            f"HostKey {home / 'host_key'}", f"PidFile {home / 'sshd.pid'}",
            f"AuthorizedKeysFile {self.workdir / 'authorized_keys'}",
            "PermitRootLogin prohibit-password", "PasswordAuthentication no",
            "KbdInteractiveAuthentication no", "UsePAM no", "StrictModes no",
            "MaxSessions 100", "MaxStartups 100", "LogLevel ERROR",
            "SetEnv PYENV_REHASH_TIMEOUT=0", "Subsystem sftp internal-sftp", ""]))
        # sshfs's own (its path in the command lines of sshfs and its ssh marks them)
        (home / "ssh_config").write_text("\n".join([
            f"Host {STORAGE}", f"  HostName {self.storage_address}", "  User root",
            f"  IdentityFile {self.workdir / 'id_ed25519'}", "  IdentitiesOnly yes",
            "  StrictHostKeyChecking no", "  UserKnownHostsFile /dev/null",
            "  LogLevel ERROR", "  ConnectTimeout 5", "  ServerAliveInterval 5",
            "  ServerAliveCountMax 3", ""]))
        with (home / "start.log").open("wb") as log:
            self.storage_sshd = subprocess.Popen(
                ["ip", "netns", "exec", ns, SSHD, "-D", "-f", str(home / "sshd_config"),
                 "-E", str(home / "sshd.log")], stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=log)
        self.wait_for_port(STORAGE)

    def _stop_storage(self) -> None:
        """Stop the storage server's sshd and every process in its namespace; remove the
        namespace (its veth pair goes with it)."""
        process, self.storage_sshd = self.storage_sshd, None
        if process is not None:
            process.kill()
            process.wait(10)
        ns = self.netns(STORAGE)
        if Path(f"/run/netns/{ns}").exists():
            for pid in self.pids(STORAGE):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)

    @contextlib.contextmanager
    def share(self, mount_point: str) -> Iterator[Path]:
        """Inside the block the storage server's export (start_storage) is mounted with
        sshfs at the absolute path `mount_point` on every node, and yields the export
        (this machine's path of the same files). Each node's sshd is restarted in a mount
        namespace of its own holding that mount (start_sshd): every process an ssh
        session starts on the node (the ssh launcher's probes, run_on) sees it, and
        nothing else on this machine does. The mount serves nothing from the node's
        cache (SSHFS_OPTIONS): a file written on one node or in the export is seen at
        once everywhere, and every byte read or written crosses the node's link and the
        storage server's, as shape() sets them. `mount_point` is made if missing (and
        then removed after; its parents are not). After the block each node's sshd is
        restarted without the mount, and the mount, sshfs and its ssh are gone (stop()
        does the same whatever happens). Sessions open on the nodes when it starts or
        ends are killed. SLURM's slurmd (start_slurm) and its jobs do not see the mount."""
        if not mount_point.startswith("/"):
            raise ValueError(f"share() needs an absolute path, not {mount_point!r}")
        if self.shared_mount is not None:
            raise RuntimeError(f"already sharing on {self.shared_mount}")
        self.start_storage()
        point = Path(mount_point)
        if point.resolve().is_relative_to(self.storage_dir.resolve()):
            raise ValueError(f"{mount_point} is inside the storage server's directory, "
                             "which the nodes do not see")
        if self.workdir.resolve().is_relative_to(point.resolve()):
            raise ValueError(f"{mount_point} would hide the cluster's own files on the nodes")
        made = not point.exists()
        point.mkdir(parents=True, exist_ok=True)
        self.shared_mount = mount_point
        try:
            self._restart_sshds()
            for node in self.nodes:
                self.wait_for(functools.partial(self.share_processes, node),
                              f"sshfs on {node}", 10)
            yield self.export
        finally:
            self.shared_mount = None
            if self._started:
                self._restart_sshds()
            if made:
                with contextlib.suppress(OSError):
                    point.rmdir()

    def _restart_sshds(self) -> None:
        for node in self.nodes:
            self.stop_sshd(node)
        for node in self.nodes:
            self.start_sshd(node)
        for node in self.nodes:
            self.wait_for_port(node)

    def share_processes(self, node: str) -> list[int]:
        """PIDs of share()'s sshfs on `node` and of the ssh it runs (their command lines
        name the storage server's ssh config); none when the node shares nothing."""
        needle = os.fsencode(str(self.storage_dir / "ssh_config"))
        found = []
        for pid in self.pids(node):
            with contextlib.suppress(OSError):
                if needle in Path(f"/proc/{pid}/cmdline").read_bytes():
                    found.append(pid)
        return found

    def run_on(self, node: str, argv: Sequence[str], *, stdin: bytes | None = None,
               timeout: float = 60.0) -> str:
        """Run `argv` on `node` (or STORAGE) as the ssh launcher runs its probes there:
        over ssh as root, in a session of the node's sshd (so inside share()'s mount,
        with the node's network); return its stdout (text). A command that fails (or
        runs past `timeout` seconds) raises RuntimeError with its exit status and
        stderr."""
        config = self.storage_dir / "ssh_config" if node == STORAGE else self.ssh_config
        command = shlex.join(argv)
        try:
            done = subprocess.run(["ssh", "-F", str(config), "-o", "BatchMode=yes", node,
                                   command], input=stdin, capture_output=True,
                                  timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"{node}: {command}: still running after {timeout:g} s") \
                from None
        if done.returncode != 0:
            raise RuntimeError(f"{node}: {command}: exit {done.returncode}: "
                               f"{done.stderr.decode(errors='replace').strip()[-2000:]}")
        return done.stdout.decode(errors="replace")

    def timed_write(self, node: str, path: str, size: int, *, start_at: float | None = None,
                    keep: bool = False, timeout: float = 120.0) -> float:
        """Write `size` bytes of random data to `path` on `node` (run_on: plain Python,
        open, write in 1 MiB blocks, flush, os.fsync) and return the rate in bytes/s,
        timed from the first write to the end of the fsync (the random data made before).
        `start_at`: a time.time() at which to start writing (nodes share this machine's
        clock, so writes on several nodes begin together). The file is removed
        afterwards unless `keep`."""
        out = self.run_on(node, [sys.executable, "-c", TIMED_WRITE, path, str(size),
                                 repr(start_at or 0.0), "keep" if keep else "remove"],
                          timeout=timeout)
        written, seconds = (float(field) for field in out.split())
        if written != size:
            raise RuntimeError(f"{node}: wrote {written:g} of {size} bytes")
        return written / seconds

    def timed_read(self, node: str, path: str, *, timeout: float = 120.0) -> float:
        """Read the whole file `path` on `node` (run_on: plain Python, 1 MiB reads) and
        return the rate in bytes/s, timed from the open to the last read."""
        out = self.run_on(node, [sys.executable, "-c", TIMED_READ, path], timeout=timeout)
        read, seconds = (float(field) for field in out.split())
        return read / seconds

    def launcher_section(self, kind: str) -> str:
        """The spec's launcher section that reaches these nodes with `kind` (ssh or slurm)."""
        if kind == "ssh":
            return f"ssh:\n  config: {self.ssh_config}\n  connect_timeout: 3 s"
        return "slurm: {}"

    def stop_sshd(self, node: str) -> None:
        """Stop the node's sshd and every process in its namespace (sessions, probes, a
        share's sshfs: its mount namespace, and the mount with it, goes with them)."""
        process, mounted = self.sshd.pop(node, None), self._mounted.pop(node, None)
        if process is not None and process.poll() is None and mounted is not None:
            # every process of the node stopped first: one that went on once the mount
            # is gone would write into this machine's directory under it (a worker
            # opening its next file); then the mount (lazily: a reader in it is not
            # waited for), then every process killed, sshfs with them
            self.kill_node_processes(node, signal.SIGSTOP)
            subprocess.run(["nsenter", "-t", str(process.pid), "-m", "umount", "-l", mounted],
                           capture_output=True, check=False, timeout=30)
            self.kill_node_processes(node, signal.SIGKILL)
        if process is not None:
            process.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(5)
            process.kill()
        self.kill_node_processes(node, signal.SIGKILL)

    def _address(self, name: str) -> str:
        return self.storage_address if name == STORAGE else self.addresses[name]

    def wait_for_port(self, node: str, seconds: float = 10.0) -> None:
        """Wait until `node`'s (or STORAGE's) sshd answers; fail at once if it ended."""
        process = self.storage_sshd if node == STORAGE else self.sshd.get(node)
        deadline = time.monotonic() + seconds
        while True:
            try:
                with socket.create_connection((self._address(node), 22), timeout=1):
                    return
            except OSError:
                ended = process is not None and process.poll() is not None
                if ended or time.monotonic() > deadline:
                    text = "".join(path.read_text(errors="replace")
                                   for path in (self.workdir / node / "start.log",
                                                self.workdir / node / "sshd.log")
                                   if path.exists())
                    why = f"ended ({process.returncode})" if ended and process else \
                        "did not start"
                    raise RuntimeError(f"sshd on {node} {why}: {text}") from None
                time.sleep(0.1)

    def pids(self, node: str) -> list[int]:
        """Processes running in the node's namespace (sshd, sessions, probes)."""
        done = subprocess.run(["ip", "netns", "pids", self.netns(node)], capture_output=True,
                              text=True, check=False)
        return [int(p) for p in done.stdout.split()]

    def python_processes(self, node: str) -> list[bytes]:
        """Command lines of the python processes in the node's namespace (probes left?)."""
        found = []
        for pid in self.pids(node):
            with contextlib.suppress(OSError):
                command = Path(f"/proc/{pid}/cmdline").read_bytes()
                if b"python" in command:
                    found.append(command)
        return found

    def left_on_node(self, node: str) -> list[bytes]:
        """Command lines of the processes in the node's namespace other than its daemons
        (the listening sshd, slurmd, share()'s sshfs and its ssh): sshd sessions, probes,
        ranks a run left behind."""
        daemons = {p.pid for p in (self.sshd.get(node), self.slurmd.get(node)) if p}
        daemons.update(self.share_processes(node))
        found = []
        for pid in self.pids(node):
            if pid not in daemons:
                with contextlib.suppress(OSError):
                    found.append(Path(f"/proc/{pid}/cmdline").read_bytes()
                                 .replace(b"\0", b" ").strip()[:120])
        return found

    def ssh_masters(self) -> list[bytes]:
        """Command lines of the ssh ControlMasters on this machine for this cluster (they
        read its ssh config): none once a run has ended."""
        needle = os.fsencode(str(self.ssh_config))
        found = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                with contextlib.suppress(OSError):
                    command = (entry / "cmdline").read_bytes()
                    if needle in command and b"ControlMaster=yes" in command:
                        found.append(command.replace(b"\0", b" ")[:160])
        return found

    def kill_node_processes(self, node: str, sig: int = signal.SIGKILL) -> None:
        for pid in self.pids(node):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)

    def stop(self) -> None:
        if not self._started:
            return
        self._started = False
        self._stop_slurm()
        for node in list(self.delay_lines):
            with contextlib.suppress(RuntimeError):
                self._stop_delay_line(node)
        for node in list(self.sshd):
            self.stop_sshd(node)
        self.shared_mount = None
        self._stop_storage()
        for node in self.nodes:
            with contextlib.suppress(RuntimeError):
                self.kill_node_processes(node)
            subprocess.run(["ip", "netns", "del", self.netns(node)], capture_output=True,
                           check=False)
        subprocess.run(["ip", "link", "del", f"{self.prefix}h"], capture_output=True,
                       check=False)
        subprocess.run(["ip", "netns", "del", self.switch], capture_output=True, check=False)
        shutil.rmtree(self.workdir, ignore_errors=True)
        atexit.unregister(self.stop)


#: start_sshd's command while share() holds (argv: the storage server's ssh config, sshfs
#: options, what to mount, where, the storage server's directory to hide, then sshd's argv)
SHARE_MOUNT = (
    'sshfs -F "$1" -o "$2" "$3" "$4" '
    '&& mount -t tmpfs -o size=64k,mode=0700 pcstorage-hidden "$5" '
    '&& shift 5 && exec "$@"')

#: timed_write's writer (argv: path, bytes, a time.time() to start at, keep|remove);
#: prints the bytes written and the seconds from the first write to the end of the fsync
TIMED_WRITE = """
import os, sys, time
path, size, start_at, keep = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
data = memoryview(os.urandom(size))
with open(path, "wb", buffering=0) as f:
    time.sleep(max(0.0, start_at - time.time()))
    begin = time.monotonic()
    written = 0
    while written < size:
        written += f.write(data[written:written + (1 << 20)])
    os.fsync(f.fileno())
    seconds = time.monotonic() - begin
if keep != "keep":
    os.unlink(path)
print(written, seconds)
"""

#: timed_read's reader (argv: path); prints the bytes read and the seconds it took
TIMED_READ = """
import sys, time
begin = time.monotonic()
read = 0
with open(sys.argv[1], "rb", buffering=0) as f:
    while block := f.read(1 << 20):
        read += len(block)
print(read, time.monotonic() - begin)
"""

#: Turn off tx checksumming (and so TSO) on the interfaces named (legacy ethtool ioctls:
#: ETHTOOL_STXCSUM, ETHTOOL_STSO, ETHTOOL_SGSO), as `ethtool -K DEV tx off tso off gso off`.
TX_CSUM_OFF = """
import ctypes, fcntl, socket, struct, sys
for name in sys.argv[1:]:
    for command in (0x17, 0x1f, 0x24):
        value = ctypes.create_string_buffer(struct.pack("II", command, 0))
        request = struct.pack("16sP", name.encode(), ctypes.addressof(value))
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            fcntl.ioctl(sock.fileno(), 0x8946, request)  # SIOCETHTOOL
"""

#: A delay line between two interfaces (argv: A B seconds): every frame one receives is
#: sent out of the other that many seconds later, in order (raw packet sockets).
DELAY_LINE = """
import heapq, select, socket, sys, time
a, b, delay = sys.argv[1], sys.argv[2], float(sys.argv[3])
def tap(name):
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))  # ETH_P_ALL
    sock.bind((name, 0))
    sock.setblocking(False)
    return sock
ends = {}
first, second = tap(a), tap(b)
ends[first], ends[second] = second, first
waiting, count = [], 0
while True:
    wait = max(0.0, waiting[0][0] - time.monotonic()) if waiting else None
    ready, _, _ = select.select(list(ends), [], [], wait)
    for sock in ready:
        while True:
            try:
                frame, address = sock.recvfrom(65536)
            except BlockingIOError:
                break
            if address[2] == socket.PACKET_OUTGOING:
                continue
            count += 1
            heapq.heappush(waiting, (time.monotonic() + delay, count, ends[sock], frame))
    now = time.monotonic()
    while waiting and waiting[0][0] <= now:
        _, _, out, frame = heapq.heappop(waiting)
        try:
            out.send(frame)
        except OSError:
            pass
"""


SHAPED_INTERCONNECT = """\
cluster:
  name: {name}
  nodes: node[1-4]
  launcher: {kind}
  python: {python}
  probe_timeout: 5 min
{section}
host: {{same_software: false}}
interconnect:
  inter_node: {{kind: veth, nics_per_node: 1, rate_per_nic: 1 Gb/s}}
  payloads: [16 MiB]
  node_counts: [2, 4]
  ranks_per_node: 1
  busbw: ">= 80%"
  warmup: {warmup}
  iterations: {iterations}
  timeout: {timeout}
"""


def shaped_interconnect_spec(netns: NetnsCluster, kind: str, *, name: str = "shaped",
                             warmup: int = 2, iterations: int = 8,
                             timeout: str = "3 min") -> str:
    """A spec for gloo all-reduce over the shaped links of `netns`' four nodes, one rank
    each, through `kind`."""
    return SHAPED_INTERCONNECT.format(name=name, kind=kind, python=sys.executable,
                                      section=netns.launcher_section(kind), warmup=warmup,
                                      iterations=iterations, timeout=timeout)

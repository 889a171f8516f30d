"""Storage probe: capacity, fsync'ed write, uncached read and metadata rate of one path.

Runs ON a node with only the standard library; shipped as one program (probes/_shipping.py)
of these modules: workspace (what it may leave), sweep (what earlier runs left), transfer
(the write and the read), parts (capacity, metadata), payload (its types); __main__ runs
it. Each part reports either its numbers or {"error": reason}; nothing is made up.

Nothing it writes survives it, however it ends (issue 11):

* The write/read test file never has a name that outlives the probe: it is opened with
  O_TMPFILE on the tested directory (a file with no name at all), or, where the
  filesystem refuses O_TMPFILE (NFS, Lustre, old kernels), created as
  PATH/.pytest-cluster-<host>-<pidns>-<pid>-<random>.data and unlinked right after the
  open. The write, its fsync and the read all go through that one descriptor, so when the
  probe ends, even by SIGKILL, the kernel closes it and frees the blocks. On NFS the client
  turns an unlinked open file into a `.nfsXXXX` silly-rename and removes it when the
  file is closed, which the kernel also does for a killed process (a client that crashes
  leaves the `.nfsXXXX` to the server's usual cleanup). The read stays uncached as before:
  O_DIRECT is switched on for the descriptor (fcntl F_SETFL), else posix_fadvise
  DONTNEED drops the file's clean pages after the fsync; and every 16 MiB block read back
  must carry the stamp it was written with (the same bytes, not a stale copy).
* The metadata test needs names: it works in PATH/.pytest-cluster-<host>-<pidns>-<pid>-
  <random>/ (made only for that test), whose `owner.lock` the probe holds under an fcntl
  lock from just after the mkdir until it has emptied the directory. SIGTERM, SIGINT and
  SIGHUP (the node runner stops a probe at its timeout or at a hang-up with SIGTERM, and
  SIGKILL after a grace; Ctrl-C) remove it before the probe exits; SIGKILL cannot be
  caught, so a metadata test killed that way leaves the directory (empty files) to the
  next run's sweep.
* At start the probe sweeps PATH for entries earlier runs left (`leftovers` in its JSON:
  path, bytes, removed, why). An entry whose `owner.lock` can be locked has no live owner
  (the kernel drops a dead process's locks, and an NFS server drops a crashed client's
  when its lease ends): it is removed. One whose lock is held belongs to a probe still
  running (another node of this run on a shared filesystem) and is left alone, unreported.
  Where the filesystem has no locks, an entry of this host and PID namespace whose PID is
  gone is removed, and any other is removed when older than 24 hours, else reported and
  left in place. A directory has no `owner.lock`, and a `.data` file a name, for
  microseconds: older than ten minutes, its probe is gone. Directories of pytest-cluster
  versions before the sweep (`.pytest-cluster-XXXXXXXX` holding only `seq.bin`, the
  test file of up to io_size, and `mdtest`) record no owner: removed after 24 hours,
  reported before.
  Files of the shared-filesystem check (`.pytest-cluster-shared-*`) are the shared probe's
  to sweep.
"""

from __future__ import annotations

from .parts import fs_type
from .sweep import sweep
from .transfer import BLOCK, evict, open_unlinked, read_file, write_file
from .workspace import LOCK_NAME, PREFIX, Workspace, host_tag, pid_namespace

__all__ = ["BLOCK", "LOCK_NAME", "PREFIX", "Workspace", "evict", "fs_type", "host_tag",
           "open_unlinked", "pid_namespace", "read_file", "sweep", "write_file"]

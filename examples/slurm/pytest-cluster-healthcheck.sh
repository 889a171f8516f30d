#!/bin/sh
# pytest-cluster as SLURM's HealthCheckProgram: the sanity level on an idle node, every
# HealthCheckInterval seconds. In slurm.conf:
#
#   HealthCheckProgram=/etc/slurm/pytest-cluster-healthcheck.sh
#   HealthCheckInterval=3600
#   HealthCheckNodeState=IDLE
#
# A node that is not accepted is drained with pytest-cluster's reason (verdict.json's drain
# line: "pytest-cluster rejected: 1 clause(s) failed: storage[/scratch].capacity"), as
# LBNL NHC does; one whose check could not finish is drained saying so.
SPEC=/etc/pytest-cluster/contract.yaml
PYTHON=/opt/pytest-cluster/bin/python
REPORTS=/var/lib/pytest-cluster/healthcheck
LIMIT=60
KEEP_DAYS=7

PATH=/usr/sbin:/usr/bin:/sbin:/bin
export PATH
RUN="$REPORTS/$(hostname -s)-$$"  # this check's own folder (REPORTS may be shared)
mkdir -p "$RUN" && cd "$RUN" || exit 1
find "$REPORTS" -mindepth 1 -maxdepth 1 -type d -mtime +"$KEEP_DAYS" -exec rm -rf {} + 2>/dev/null
timeout -k 5 "$LIMIT" "$PYTHON" -m pytest --cluster="$SPEC" -m sanity -q -p no:cacheprovider \
    --cluster-reports="$RUN" --cluster-node=. >"$RUN/pytest.log" 2>&1
status=$?
# the drain lines of this run (one per node not accepted; this node, here), or none
"$PYTHON" - "$RUN/latest/verdict.json" "$status" <<'PY'
import json, shlex, subprocess, sys
path, status = sys.argv[1], int(sys.argv[2])
try:
    verdict = json.load(open(path))
    lines = [] if verdict["verdict"] == "ACCEPTED" else verdict["drain"]
except (OSError, ValueError, KeyError):
    lines = []
for line in lines:
    if not line.startswith("#"):  # a simulated or stand-in node: never drained
        subprocess.run(shlex.split(line), check=False)
if not lines and status != 0:
    import socket
    node = socket.gethostname().split(".")[0]
    subprocess.run(["scontrol", "update", f"NodeName={node}", "State=DRAIN",
                    f"Reason=pytest-cluster: the check did not finish (exit {status})"],
                   check=False)
PY
exit 0

#!/bin/sh
# pytest-cluster as SLURM's HealthCheckProgram: the sanity level on an idle node, every
# HealthCheckInterval seconds. Set the three paths below, then in slurm.conf:
#
#   HealthCheckProgram=/etc/slurm/pytest-cluster-healthcheck.sh
#   HealthCheckInterval=3600
#   HealthCheckNodeState=IDLE
#
# What it does with the node (`pytest-cluster gate` decides; one line per reason):
#   PASS   every sanity check of this node passed: nothing is done.
#   FAIL   a check of this node failed, or the node did not answer its own probes: the node
#          is drained with pytest-cluster's reason, as LBNL NHC does (scontrol update
#          NodeName=<node> State=DRAIN Reason="pytest-cluster rejected: 1 clause(s) failed:
#          storage[/scratch].capacity"). Why: this run's evidence under REPORTS
#          (<host>-<time>/latest/verdict.json, report.html). Put it back once fixed:
#          scontrol update NodeName=<node> State=RESUME
#   ERROR  the tool could not judge the node: the spec or an option is not valid (a typo in
#          the contract), the interpreter is missing, pytest-cluster crashed, LIMIT was
#          reached, a check could not be decided. The node is NOT drained (a health check
#          that drains the fleet for its own fault is worse than none); it is said loudly
#          instead, on stderr and to syslog (`logger -t pytest-cluster`, priority
#          daemon.err): alert on it (journalctl -t pytest-cluster -p err).
# It always exits 0 (slurmd does nothing with a health check's exit code).
#
# Before deploying a changed contract, check it where you edit it:
#   pytest --cluster=contract.yaml --collect-only -q    # exit 4 names the file, line and key
SPEC=/etc/pytest-cluster/contract.yaml
PYTHON=/opt/pytest-cluster/bin/python
REPORTS=/var/lib/pytest-cluster/healthcheck
LIMIT=60
KEEP_DAYS=7

PATH=/usr/sbin:/usr/bin:/sbin:/bin
export PATH
NODE=${SLURMD_NODENAME:-$(hostname -s)}
say() {  # $1: syslog priority; the rest: the line
    priority=$1; shift
    echo "pytest-cluster healthcheck on $NODE: $*" >&2
    command -v logger >/dev/null 2>&1 && \
        logger -t pytest-cluster -p "$priority" -- "healthcheck on $NODE: $*"
    return 0
}
STARTED=$(date +%s)
RUN="$REPORTS/$NODE-$STARTED-$$"  # this check's own folder (REPORTS may be shared)
if ! { mkdir -p "$RUN" && cd "$RUN"; }; then
    say daemon.err "ERROR: cannot write its evidence under $RUN; not drained"
    exit 0
fi
find "$REPORTS" -mindepth 1 -maxdepth 1 -type d -mtime +"$KEEP_DAYS" -exec rm -rf {} + 2>/dev/null
timeout -k 5 "$LIMIT" "$PYTHON" -m pytest --cluster="$SPEC" -m sanity -q -p no:cacheprovider \
    --cluster-reports="$RUN" --cluster-node=. >"$RUN/pytest.log" 2>&1
STATUS=$?
# on FAIL the gate drains the failed node (a simulated one never)
"$PYTHON" -m pytest_cluster.cli gate "$RUN" --exit-status "$STATUS" --log "$RUN/pytest.log" \
    --since "$STARTED" --drain >"$RUN/gate.log" 2>&1
case $? in
    0) ;;
    1) say daemon.warning "$(head -c 1000 "$RUN/gate.log" | tr '\n' ' ')(evidence: $RUN)" ;;
    *) say daemon.err "$(head -c 1000 "$RUN/gate.log" | tr '\n' ' ')(evidence: $RUN)" ;;
esac
exit 0
